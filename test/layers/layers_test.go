// Package layers_test checks the import graph of the module against its
// layers. From the top down: cmd, test, world, actors, then supervision,
// messages and config side by side, then internal, and at the bottom the
// leaf error vocabulary supervision/fault. A package may import one in a
// lower layer or one of its own group (actors/* each other, internal/* each
// other); never one above it, and never a sibling group of its own layer.
package layers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/wisent/singularity/test/testkit"
)

const module = "github.com/wisent/singularity"

const protoactor = "github.com/asynkron/protoactor-go"

// layers ranks every group of the module, highest first. A package's group
// is the longest entry that is its path or a prefix of it, so
// supervision/fault is not supervision.
var layers = map[string]int{
	"cmd":               7,
	"test":              6,
	"world":             5,
	"actors":            4,
	"supervision":       3,
	"messages":          3,
	"config":            3,
	"internal":          2,
	"supervision/fault": 1,
}

// protoactorAllowed names the packages below actors that may import
// protoactor: supervision and messages are written in its terms, and the
// debug endpoint walks the live actor tree (its Description names the
// children's *actor.PID).
var protoactorAllowed = map[string]bool{
	"supervision":             true,
	"messages":                true,
	"internal/debug":          true,
	"internal/debug/describe": true,
}

// graph is the module's packages (relative to the module, "" for none)
// each with its non-test imports.
type graph map[string][]string

// goList runs go list from the module root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = testkit.ModuleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func load(t *testing.T) graph {
	t.Helper()
	g := graph{}
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...") {
		fields := strings.Fields(line)
		pkg, ok := local(fields[0])
		if !ok {
			t.Fatalf("go list named %s, outside the module", fields[0])
		}
		g[pkg] = fields[1:]
	}
	if len(g) == 0 {
		t.Fatal("go list found no packages")
	}
	return g
}

// local is path relative to the module, and whether it is in the module.
func local(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// group is the entry of layers that pkg belongs to, or "".
func group(pkg string) string {
	best := ""
	for g := range layers {
		if (pkg == g || strings.HasPrefix(pkg, g+"/")) && len(g) > len(best) {
			best = g
		}
	}
	return best
}

func isProtoactor(path string) bool {
	return path == protoactor || strings.HasPrefix(path, protoactor+"/")
}

// isStd reports whether path is in the standard library (its first element
// has no dot).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// violations lists every import of g that breaks the layers, sorted.
func violations(g graph) []string {
	var bad []string
	for pkg, imports := range g {
		from := group(pkg)
		if from == "" {
			bad = append(bad, fmt.Sprintf("%s: in no layer (add its group to layers)", pkg))
			continue
		}
		for _, imp := range imports {
			if from == "supervision/fault" && !isStd(imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s: the leaf imports the standard library only", pkg, imp))
				continue
			}
			if isProtoactor(imp) && layers[from] < layers["actors"] && !protoactorAllowed[pkg] {
				bad = append(bad, fmt.Sprintf("%s imports %s: no protoactor below actors", pkg, imp))
				continue
			}
			dep, ok := local(imp)
			if !ok {
				continue
			}
			to := group(dep)
			switch {
			case to == "":
				bad = append(bad, fmt.Sprintf("%s imports %s: in no layer", pkg, dep))
			case to == from:
			case layers[to] > layers[from]:
				bad = append(bad, fmt.Sprintf("%s imports %s: %s stands above %s", pkg, dep, to, from))
			case layers[to] == layers[from]:
				bad = append(bad, fmt.Sprintf("%s imports %s: %s and %s stand side by side", pkg, dep, to, from))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func TestImportsGoDownward(t *testing.T) {
	for _, v := range violations(load(t)) {
		t.Error(v)
	}
}

// The named rules of the layering, spelled out so that a change of the
// table above cannot quietly drop one.
func TestNamedRules(t *testing.T) {
	g := load(t)
	forbidden := func(pkg string, deny func(imp string) bool, why string) {
		t.Helper()
		for _, imp := range g[pkg] {
			if deny(imp) {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
	is := func(rel string) func(string) bool {
		return func(imp string) bool {
			dep, ok := local(imp)
			return ok && (dep == rel || strings.HasPrefix(dep, rel+"/"))
		}
	}
	for pkg := range g {
		if pkg == "supervision/fault" || strings.HasPrefix(pkg, "internal/") {
			forbidden(pkg, is("messages"), "messages stands above it")
			forbidden(pkg, is("actors"), "the actors stand above it")
			if !protoactorAllowed[pkg] {
				forbidden(pkg, isProtoactor, "it is below the actor runtime")
			}
		}
	}
	if _, ok := g["supervision/fault"]; !ok {
		t.Fatal("supervision/fault is missing")
	}
	forbidden("supervision", is("messages"), "supervision and messages stand side by side")
	forbidden("supervision", is("actors"), "the actors stand above it")
	forbidden("messages", is("actors"), "the actors stand above it")
	forbidden("messages", func(imp string) bool {
		return is("supervision")(imp) && !is("supervision/fault")(imp)
	}, "supervision and messages stand side by side")
}

// The state store and the configuration are usable without the actor
// runtime: nothing they depend on, however indirectly, is protoactor.
func TestStateAndConfigNeedNoProtoactor(t *testing.T) {
	for _, pkg := range []string{"./internal/store/state", "./config", "./supervision/fault"} {
		for _, dep := range goList(t, "-deps", pkg) {
			if isProtoactor(dep) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// The check itself can fail: a made-up graph breaking each rule is caught.
func TestViolationsAreFound(t *testing.T) {
	g := graph{
		"internal/store/state": {protoactor + "/actor", module + "/messages"},
		"supervision":          {module + "/messages"},
		"supervision/fault":    {"fmt", module + "/internal/identity"},
		"messages":             {module + "/supervision/fault", module + "/actors/being"},
		"actors/being":         {module + "/cmd/singularity"},
		"elsewhere":            nil,
	}
	got := violations(g)
	want := []string{
		"actors/being imports cmd/singularity: cmd stands above actors",
		"elsewhere: in no layer (add its group to layers)",
		"internal/store/state imports " + protoactor + "/actor: no protoactor below actors",
		"internal/store/state imports messages: messages stands above internal",
		"messages imports actors/being: actors stands above messages",
		"supervision imports messages: messages and supervision stand side by side",
		"supervision/fault imports " + module + "/internal/identity: the leaf imports the standard library only",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
