// Package testkit is the tests' one shared kit: whatever two test
// packages would otherwise each write for themselves lives here once.
//
// Its contract:
//
//   - Binaries. Build compiles a command of this module once per test
//     process (Singularity and ExampleLas name the two the tests run);
//     Main, or VerifyMain, removes them when the tests are done. Call one
//     of the two as the whole body of TestMain in any package that builds.
//   - Identity and environment. Identity is the one identity a test being
//     has; ValidEnv is the one complete, valid environment of the
//     singularity binary, whose identity is exactly Identity. Adding a
//     configuration variable the binary requires means adding it to
//     ValidEnv's map and nowhere else; a test that needs something else
//     changes its own copy of the map.
//   - Journal. Journal reads a being's activity journal; Count,
//     CountWhere and Types look at its events.
//   - Leaks. LeakOptions are the goroutines protoactor leaves behind on
//     purpose, the only ones a leak check may ignore; VerifyMain checks
//     a test binary with them.
//   - Commands. Environ, ExitCode and LastLine help run a built binary and
//     read its outcome; ServerEverything is the pinned third-party MCP
//     server (skipping a test where it is not installed).
//   - Money. USD is an amount the test writes down; CheckInvariant is the
//     ledger invariant of docs/money.md#the-invariant, which the runtime
//     keeps by construction and only the tests check.
//
// Nothing here sleeps or waits.
//
// It depends on the standard library, goleak and internal/store/state
// only, so the tests of every package but state and what state imports
// (money, chat, supervision) may use it. Fakes of peers live beside it
// under test/ (bramatest, debugtest); it holds none itself.
package testkit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Build compiles the main package at pkg (a path below the module root,
// such as "./cmd/singularity") and returns the binary's path. The binary
// is built once per test process and removed by Cleanup.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if path, ok := built[pkg]; ok {
		return path
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "singularity-bin-")
		if err != nil {
			t.Fatalf("temp dir for binaries: %v", err)
		}
		dir = d
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ModuleRoot(t)
	if static[pkg] {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, output)
	}
	built[pkg] = out
	return out
}

// static names the binaries built without cgo, as `make build` builds
// the example Las: a Las runs once per being, and a static binary maps no
// C library (about 1.4 MB less resident per process) and needs no dynamic
// loader to start (about 0.6 ms less CPU a start, which a takeover pays
// for every being at once).
var static = map[string]bool{"./cmd/examplelas": true, "./test/crash/recordlas": true}

// Singularity is the singularity binary (cmd/singularity).
//
// The dedicated Las keeper (cmd/singularity-keeper) is built beside it,
// as `make build` installs them, so the runtime starts each Las under
// that keeper; LoneSingularity is the runtime without it.
func Singularity(t testing.TB) string {
	t.Helper()
	Build(t, "./cmd/singularity-keeper")
	return Build(t, "./cmd/singularity")
}

// LoneSingularity is a copy of the singularity binary in a directory of
// its own, with no dedicated keeper beside it: it starts each Las under
// itself, in its las-keeper mode (keeper.Path).
func LoneSingularity(t testing.TB) string {
	t.Helper()
	src := Build(t, "./cmd/singularity")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	lone := filepath.Join(t.TempDir(), "singularity")
	if err := os.WriteFile(lone, data, 0o755); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return lone
}

// ExampleLas is the example Las binary (cmd/examplelas), an MCP server
// over stdio configured by the JSON file given as its entrypoint.
func ExampleLas(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/examplelas")
}

// Cleanup removes every binary built by this process; Main and
// VerifyMain call it after the tests ran.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Main runs a test binary's tests and removes the binaries they built;
// call it as the whole body of TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// ModuleRoot is the directory holding go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the module root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ServerEverything is the entrypoint of the real third-party MCP server
// pinned in test/peers, to run with node; it skips t when the server is
// not installed (`make peers`, which CI runs, installs it).
func ServerEverything(t testing.TB) string {
	t.Helper()
	path := filepath.Join(ModuleRoot(t), "test", "peers", "node_modules",
		"@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("server-everything is not installed (%v); run `make peers` (cd test/peers && npm ci)", err)
	}
	return path
}

// NPMServer is the entrypoint of the MCP server package
// @modelcontextprotocol/<name> pinned in test/peers (server-filesystem,
// server-memory, server-everything), to run with node; it skips t when
// the peers are not installed (`make peers`, which CI runs).
func NPMServer(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(ModuleRoot(t), "test", "peers", "node_modules",
		"@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is not installed (%v); run `make peers` (cd test/peers && npm ci)", name, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed: %v", err)
	}
	return path
}

// ExitCode is the exit code of a command that ran to its end with err
// from Run or Wait: 0 for no error, the process's code (-1 if a signal
// ended it) for an *exec.ExitError. Any other error means the command
// never ran as it should, and fails t.
func ExitCode(t testing.TB, err error) int {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		t.Fatalf("command did not run: %v", err)
		return -1
	}
}

// LastLine is the last line of text, with its newline: the one line a
// failing command prints last, after any log lines.
func LastLine(text string) string {
	text = strings.TrimRight(text, "\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	return text + "\n"
}
