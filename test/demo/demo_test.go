// Package demo_test runs the built `singularity demo` as an operator would
// (docs/demo.md#running-the-demo): the embedded simulated world must run on
// its own, say it is a simulation, print a summary of the whole family, stop
// the family children-first on SIGINT and resume it from its sandbox.
package demo_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// deadline bounds one run of the demo.
const deadline = 2 * time.Minute

// run runs the demo to its end and returns stdout, stderr and the exit
// code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	bin := testkit.Singularity(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		require.NoError(t, ctx.Err(), "the demo did not end in time; stderr:\n%s", stderr.String())
	}
	code := testkit.ExitCode(t, err)
	return stdout.String(), stderr.String(), code
}

// row is one line of the summary table.
type row struct {
	depth                   int
	name, status            string
	cycles                  string
	starting, granted       money.Amount
	balance, earned, netPNL money.Amount
	cached                  uint64
}

var rowRE = regexp.MustCompile(`^( *)(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s*$`)

// summary parses the table printed after "Summary (simulated money):".
func summary(t *testing.T, stdout string) map[string]row {
	t.Helper()
	_, table, ok := strings.Cut(stdout, "Summary (simulated money):\n")
	require.True(t, ok, "no summary in:\n%s", stdout)
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	require.Equal(t, "columns: cycles lived; in USD, rounded: starting balance, granted to children, balance, earned, net = earned - spent; cached: prompt tokens the simulated Brama served from its prompt cache",
		lines[0], "one line says what the columns hold")
	lines = lines[1:]
	require.Regexp(t, `^being\s+status\s+cycles\s+starting\s+granted\s+balance\s+earned\s+net\s+cached\s*$`, lines[0])
	require.Equal(t, "family ledger: exact", lines[len(lines)-1], "the family's money is conserved")
	rows := map[string]row{}
	for _, line := range lines[1 : len(lines)-1] {
		m := rowRE.FindStringSubmatch(line)
		require.NotNil(t, m, "summary row %q", line)
		parse := func(s string) money.Amount {
			a, err := money.Parse(s)
			require.NoError(t, err, "decimal in %q", line)
			return a
		}
		cached, err := strconv.ParseUint(m[10], 10, 64)
		require.NoError(t, err, "cached tokens in %q", line)
		rows[m[2]] = row{depth: len(m[1]) / 2, name: m[2], status: m[3], cycles: m[4],
			starting: parse(m[5]), granted: parse(m[6]), balance: parse(m[7]), earned: parse(m[8]), netPNL: parse(m[9]), cached: cached}
	}
	return rows
}

// TestDemoRunsThreeCycles is `make demo`: three cycles of the root, a
// summary of every being, and the word that it is all simulated.
func TestDemoRunsThreeCycles(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "demo", "--cycles", "3", "--dir", dir)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	assert.Contains(t, stdout, "SIMULATION")
	assert.Contains(t, stdout, "no real money moves")
	assert.Regexp(t, `debug endpoint: http://127\.0\.0\.1:\d+/debug/`, stdout, "the debug endpoint is on, on loopback")
	for _, n := range []string{"1", "2", "3"} {
		assert.Contains(t, stdout, "root cycle "+n+" completed")
	}
	assert.NotContains(t, stdout, "root cycle 4")

	rows := summary(t, stdout)
	root := filepath.Join(dir, "state")
	family := walk(t, root)
	for _, name := range []string{"Ada", "Bo", "Cy"} {
		require.Contains(t, rows, name, "the summary lists %s", name)
	}
	if _, spawned := family["Di"]; spawned {
		require.Contains(t, rows, "Di", "Bo spawned Di, so the summary lists Di")
	}
	assert.Equal(t, "3", rows["Ada"].cycles)
	assert.Equal(t, 0, rows["Ada"].depth)
	assert.Equal(t, 1, rows["Bo"].depth)
	assert.Equal(t, 1, rows["Cy"].depth)
	for name, r := range rows {
		b := family[name]
		require.NotNil(t, b.st, "%s is on disk", name)
		assert.Equal(t, state.StatusStopped, r.status)
		// The summary rounds for reading (docs/money.md#shown-to-people).
		assert.True(t, testkit.USD(b.st.Budget.Remaining.Human()).Equal(r.balance), "%s balance", name)
		assert.True(t, testkit.USD(b.st.Budget.NetProfit().Human()).Equal(r.netPNL), "%s net", name)
		assert.Equal(t, b.st.Budget.Remaining.Sub(b.st.Budget.Starting).Add(b.st.Budget.Granted).String(), b.st.Budget.NetProfit().String(), "%s: net = balance − starting + granted", name)
		assert.True(t, r.starting.Equal(b.st.Budget.Starting) && r.granted.Equal(b.st.Budget.Granted), "%s starting and granted (whole cents)", name)
		if sold(b.events) {
			assert.Positive(t, r.earned.Sign(), "%s sold in the simulated market, so it earned", name)
		}
		assert.Equal(t, cachedIn(b.events), r.cached, "%s: the cached prompt tokens of its journal", name)
	}
	assert.Positive(t, rows["Ada"].cached, "three cycles of Ada's prompts share prefixes the simulated Brama caches")
	assert.True(t, sold(family["Ada"].events), "Ada sold in the simulated market")
	assert.Positive(t, rows["Ada"].earned.Sign())
	assert.Positive(t, rows["Ada"].granted.Sign(), "Ada endowed her children")
	assert.True(t, rows["Bo"].starting.Add(rows["Cy"].starting).Equal(rows["Ada"].granted), "Ada's grants are Bo's and Cy's starting balances")

	// One line per notable event, as it happened (docs/demo.md#what-it-prints).
	for _, re := range []string{
		`(?m)^  \d\d:\d\d:\d\d Ada spawned child Bo with (an endowment|a starting balance) of \d+\.\d\d USD$`,
		`(?m)^  \d\d:\d\d:\d\d Ada spawned child Cy with `,
		`(?m)^  \d\d:\d\d:\d\d Bo spawned child Di with `,
		`(?m)^  \d\d:\d\d:\d\d Ada earned 0\.05 USD \(finance__finance_sell_report\)$`,
		`(?m)^  \d\d:\d\d:\d\d Ada wrote workspace file notes/Ada-cycle-1\.md \(\d+ bytes\)$`,
		`(?m)^  root cycle 1 completed: balance \d+\.\d\d USD, earned \d+\.\d\d USD$`,
	} {
		assert.Regexp(t, re, stdout)
	}
	// The sandbox given with --dir stays, its secret file does not.
	assert.DirExists(t, root)
	assert.NoFileExists(t, filepath.Join(dir, "brama.secret"), "the demo never leaves its secret file behind")
}

// TestDemoRemovesItsTemporarySandbox: without --dir the demo's sandbox is
// a temporary directory, removed at the end.
func TestDemoRemovesItsTemporarySandbox(t *testing.T) {
	stdout, stderr, code := run(t, "demo", "--cycles", "1", "--cycle-interval-secs", "0.2")
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	m := regexp.MustCompile(`(?m)^sandbox: (\S+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	assert.Contains(t, stdout, "sandbox "+m[1]+" removed (give --dir to keep one)")
	assert.NoDirExists(t, m[1])
	assert.Contains(t, stdout, "--cycles 0 runs until Ctrl-C")
}

// TestDemoSIGINTStopsChildrenFirstAndResumes interrupts a demo that runs
// until Ctrl-C once the whole family lives, checks the graceful stop on
// disk, then resumes the sandbox for two more root cycles.
func TestDemoSIGINTStopsChildrenFirstAndResumes(t *testing.T) {
	bin := testkit.Singularity(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--dir", dir, "--cycle-interval-secs", "0.2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Read stdout as it comes: the debug address, then one line per root
	// cycle. After each root cycle, look at the tree; once all four beings
	// have cycled twice, interrupt.
	var stdout strings.Builder
	lines := bufio.NewScanner(out)
	debugURL := ""
	interrupted := false
	for lines.Scan() {
		line := lines.Text()
		stdout.WriteString(line + "\n")
		if u, ok := strings.CutPrefix(line, "debug endpoint: "); ok {
			debugURL, _, _ = strings.Cut(u, " ")
			require.Regexp(t, `^http://127\.0\.0\.1:\d+/debug/$`, debugURL)
		}
		if !interrupted && strings.HasPrefix(line, "  root cycle ") && everyoneCycled(t, debugURL, 2) {
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			interrupted = true
		}
	}
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	require.True(t, interrupted, "the family never came whole; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "family stopped.")
	rows := summary(t, stdout.String())
	for _, name := range []string{"Ada", "Bo", "Cy", "Di"} {
		assert.Contains(t, rows, name)
	}

	root := filepath.Join(dir, "state")
	first := walk(t, root)
	require.Len(t, first, 4)
	for name, b := range first {
		checkStopped(t, name, b)
		assert.Equal(t, 1, testkit.Count(b.events, state.EventStarted), "%s started once", name)
	}

	// The sandbox holds state, so the demo resumes it: two more cycles of
	// the root, every counter and budget going on.
	stdout2, stderr2, code := run(t, "demo", "--dir", dir, "--cycles", "2", "--cycle-interval-secs", "0.2")
	require.Equal(t, 0, code, "stderr:\n%s", stderr2)
	assert.Contains(t, stdout2, "resuming the family saved in the sandbox")
	second := walk(t, root)
	require.Len(t, second, 4)
	assert.Equal(t, first["Ada"].st.Cycle+2, second["Ada"].st.Cycle, "the root ran two more cycles")
	for name, b := range second {
		checkStopped(t, name, b)
		a := first[name]
		if name != "Ada" {
			// The children boot after the root's own boot and Las (the
			// grandchild last); the root's two cycles may end before one
			// of them has booted on a loaded machine, and a stop that
			// reaches a child before its boot step is durable leaves its
			// state as it was, which is also a clean stop.
			assert.Contains(t, []int{1, 2}, testkit.Count(b.events, state.EventStarted), "%s was resumed or stopped while booting", name)
		} else {
			assert.Equal(t, 2, testkit.Count(b.events, state.EventStarted), "%s was resumed", name)
		}
		assert.GreaterOrEqual(t, b.st.Cycle, a.st.Cycle, "%s's cycle counter", name)
		assert.True(t, b.st.Budget.Starting.Equal(a.st.Budget.Starting), "%s keeps its starting budget", name)
		assert.GreaterOrEqual(t, b.st.Budget.APISpent.Cmp(a.st.Budget.APISpent), 0, "%s's spending goes on", name)
		assert.GreaterOrEqual(t, b.st.Budget.Earned.Cmp(a.st.Budget.Earned), 0, "%s's earnings are kept", name)
		assert.Equal(t, a.st.Mind.Children, b.st.Mind.Children)
	}
	rows = summary(t, stdout2)
	assert.Equal(t, strings.TrimSpace(rows["Ada"].cycles), uintText(second["Ada"].st.Cycle))
}

// TestDemoDebugEndpointLoopbackOnly: the demo refuses to serve the debug
// endpoint beyond loopback, with the documented sentence and exit 2, before
// it starts anything.
func TestDemoDebugEndpointLoopbackOnly(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "demo", "--cycles", "1", "--dir", dir, "--debug-addr", "0.0.0.0:0")
	assert.Equal(t, 2, code)
	assert.Equal(t, "singularity: configuration: debug address must be loopback\n", testkit.LastLine(stderr))
	assert.NotContains(t, stdout, "debug endpoint:")
	_, err := os.Stat(filepath.Join(dir, "state", "state.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no being was created")
}

// everyoneCycled reports whether the debug tree shows Ada, Bo, Cy and Di
// each at cycle n or later.
func everyoneCycled(t *testing.T, debugURL string, n float64) bool {
	t.Helper()
	if debugURL == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(debugURL, "/")+"/actors", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var tree node
	require.NoError(t, json.Unmarshal(body, &tree))
	cycles := map[string]float64{}
	tree.beings(cycles)
	for _, name := range []string{"Ada", "Bo", "Cy", "Di"} {
		if cycles[name] < n {
			return false
		}
	}
	return true
}

type node struct {
	Kind     string  `json:"kind"`
	Name     string  `json:"name"`
	Cycle    float64 `json:"cycle"`
	Children []node  `json:"children"`
}

func (n node) beings(out map[string]float64) {
	if n.Kind == "being" {
		out[n.Name] = n.Cycle
	}
	for _, c := range n.Children {
		c.beings(out)
	}
}

// files is one being as found on disk.
type files struct {
	st     *state.Being
	events []state.Event
	parent string
}

// walk loads every being of the family from the root's directory down.
func walk(t *testing.T, root string) map[string]files {
	t.Helper()
	out := map[string]files{}
	var visit func(dir, parent string)
	visit = func(dir, parent string) {
		st, err := state.Load(dir)
		require.NoError(t, err)
		events := testkit.Journal(t, dir)
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), dir)
		out[st.Identity.Name] = files{st: st, events: events, parent: parent}
		for _, c := range st.Mind.Children {
			visit(filepath.Join(dir, "children", c.ID), st.Identity.Name)
		}
	}
	visit(root, "")
	// A child's final save is before its parent's.
	for name, f := range out {
		if f.parent == "" || len(f.events) == 0 || len(out[f.parent].events) == 0 {
			continue
		}
		mine, theirs := f.events[len(f.events)-1], out[f.parent].events[len(out[f.parent].events)-1]
		if mine.Type == state.EventStopped && theirs.Type == state.EventStopped {
			assert.True(t, mine.At.Before(theirs.At.Time), "%s stopped at %s, before its parent %s at %s", name, mine.At, f.parent, theirs.At)
		}
	}
	return out
}

// checkStopped: a gracefully stopped being says so in its state and as
// the last line of its journal, and its ledger invariant holds over the
// whole journal.
func checkStopped(t *testing.T, name string, f files) {
	t.Helper()
	assert.Equal(t, state.StatusStopped, f.st.Status, "%s status", name)
	require.NotEmpty(t, f.events)
	last := f.events[len(f.events)-1]
	assert.Equal(t, state.EventStopped, last.Type, "%s's journal ends with stopped", name)
	assert.Equal(t, state.StatusStopped, last.Status)
	assert.NoError(t, testkit.CheckInvariant(f.st.Budget, f.events), name)
	var cycle uint64
	for _, e := range f.events {
		if e.Type == state.EventCycleStarted {
			assert.Equal(t, cycle+1, e.Cycle, "%s's cycles continue", name)
			cycle = e.Cycle
		}
	}
	assert.Equal(t, f.st.Cycle, cycle)
}

// sold reports whether the being's journal shows a successful simulated
// sale.
func sold(events []state.Event) bool {
	for _, e := range events {
		if e.Type == state.EventToolFinished && e.Tool == "finance__finance_sell_report" && e.Status == "success" {
			return true
		}
	}
	return false
}

// cachedIn sums the cached prompt tokens of a journal's completions.
func cachedIn(events []state.Event) uint64 {
	var n uint64
	for _, e := range events {
		if e.Type == state.EventModelCompleted {
			n += e.Usage.CachedTokens
		}
	}
	return n
}

func uintText(n uint64) string {
	raw, _ := json.Marshal(n)
	return string(raw)
}
