package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// statusJSON is the part of `status --format json` the tests read.
type statusJSON struct {
	Beings []struct {
		ID, Name, Status, Remaining, Spent, Earned, Granted, Starting, Ledger string
		Depth                                                                 int
	} `json:"beings"`
	Totals struct {
		Beings                                int
		Starting, Granted, Spent, Earned, Off string
		Remaining                             string
	} `json:"totals"`
	FamilyLedger string   `json:"family_ledger"`
	Unreadable   []string `json:"unreadable"`
}

func status(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return run(t, map[string]string{}, append([]string{"status", "--state-dir", dir}, args...)...)
}

func parseStatus(t *testing.T, out string) statusJSON {
	t.Helper()
	var s statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &s), "status JSON:\n%s", out)
	return s
}

// TestStatusOfAStoppedFamily: the demo family after two cycles, read
// offline: every being in a table row and in the JSON, the family ledger
// exact, nothing written. A state.json altered by hand is reported off by
// exactly what was added.
func TestStatusOfAStoppedFamily(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "2", "--dir", dir)
	require.Equal(t, 0, demo.code, demo.stderr)
	root := filepath.Join(dir, "state")
	before := testkit.Snapshot(t, root)

	table := status(t, root)
	require.Equal(t, 0, table.code, table.stderr)
	lines := strings.Split(strings.TrimRight(table.stdout, "\n"), "\n")
	require.Regexp(t, `^NAME\s+STATUS\s+CYCLE\s+REMAINING\s+SPENT\s+EARNED\s+GRANTED\s+FUNDED\s+LEDGER\s+LAST ACTION\s+UPDATED$`, lines[0])
	assert.Regexp(t, `^Ada\s+stopped\s+2\s`, lines[1])
	assert.Regexp(t, `(?m)^  Bo\s+stopped\s`, table.stdout)
	assert.Regexp(t, `(?m)^  Cy\s+(stopped|starting)\s`, table.stdout, "Cy, spawned in the last cycle, may not have lived yet")
	assert.Equal(t, "family ledger: exact", lines[len(lines)-1])

	js := status(t, root, "--format", "json")
	require.Equal(t, 0, js.code, js.stderr)
	s := parseStatus(t, js.stdout)
	assert.Equal(t, "exact", s.FamilyLedger)
	assert.Equal(t, "1", s.Totals.Starting)
	assert.Equal(t, "0", s.Totals.Off)
	require.GreaterOrEqual(t, len(s.Beings), 3)
	ada, err := state.Load(root)
	require.NoError(t, err)
	assert.Equal(t, "Ada", s.Beings[0].Name)
	assert.Equal(t, "demo-ada", s.Beings[0].ID, "the root's id is its agent id, not its directory's name")
	children := map[string]string{}
	for _, c := range ada.Mind.Children {
		children[c.Name] = c.ID
	}
	for _, b := range s.Beings[1:] {
		if b.Depth == 1 {
			assert.Equal(t, children[b.Name], b.ID, "a child's id is the one spawn_child gave it")
		}
	}
	assert.Regexp(t, `(?m)^family: [2-9] beings, starting 1, `, table.stdout)
	assert.Equal(t, ada.Budget.Remaining.String(), s.Beings[0].Remaining)
	assert.Equal(t, ada.Budget.Granted.String(), s.Beings[0].Granted)
	grants := money.Zero
	for _, b := range s.Beings[1:] {
		if b.Depth == 1 {
			grants = grants.Add(testkit.USD(b.Starting))
		}
		assert.Equal(t, "exact", b.Ledger, b.Name)
	}
	assert.Equal(t, ada.Budget.Granted.String(), grants.String(), "Ada's grants are her children's starting balances")
	require.Equal(t, before, testkit.Snapshot(t, root), "status writes nothing")

	// Add 0.5 to Bo's remaining behind the ledger's back.
	var bo string
	for _, c := range ada.Mind.Children {
		if c.Name == "Bo" {
			bo = filepath.Join(root, "children", c.ID, state.StateFile)
		}
	}
	data, err := os.ReadFile(bo)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	budget := raw["budget"].(map[string]any)
	budget["remaining"] = testkit.USD(budget["remaining"].(string)).Add(testkit.USD("0.5")).String()
	data, err = json.Marshal(raw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bo, data, 0o600))

	table = status(t, root)
	require.Equal(t, 0, table.code, table.stderr)
	assert.Contains(t, table.stdout, "family ledger: off by 0.5\n")
	assert.Regexp(t, `(?m)^  Bo\s+stopped\s+\d+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+off by 0\.5\s`, table.stdout)
	s = parseStatus(t, status(t, root, "--format", "json").stdout)
	assert.Equal(t, "off by 0.5", s.FamilyLedger)
	assert.Equal(t, "0.5", s.Totals.Off)
}

// TestStatusOfARunningFamily: status reads a family while `demo` runs it
// (read-only, no lock taken): the family ledger is exact at whatever
// moment each being is read, and the run goes on undisturbed.
func TestStatusOfARunningFamily(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(testkit.Singularity(t), "demo", "--dir", dir)
	cmd.Env = testkit.Environ(map[string]string{})
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	cycles := make(chan int, 64)
	go func() {
		re := regexp.MustCompile(`root cycle (\d+) completed`)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			if re.MatchString(sc.Text()) {
				n++
				cycles <- n
			}
		}
		close(cycles)
	}()
	root := filepath.Join(dir, "state")
	for reads := 0; reads < 3; {
		select {
		case n, ok := <-cycles:
			require.True(t, ok, "the demo ended early")
			if n < 2 {
				continue // the children are spawned in the first cycles
			}
			r := status(t, root, "--format", "json")
			require.Equal(t, 0, r.code, r.stderr)
			s := parseStatus(t, r.stdout)
			assert.Equal(t, "exact", s.FamilyLedger, "read while running:\n%s", r.stdout)
			assert.GreaterOrEqual(t, s.Totals.Beings, 3)
			reads++
		case <-time.After(60 * time.Second):
			t.Fatal("the demo made no progress")
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the demo stops cleanly after being read")
	case <-time.After(60 * time.Second):
		t.Fatal("the demo did not stop")
	}
}

// TestStatusOfNoFamily: a directory without a state is exit 4.
func TestStatusOfNoFamily(t *testing.T) {
	t.Parallel()
	r := status(t, t.TempDir())
	assert.Equal(t, 4, r.code)
	assert.Regexp(t, `^singularity: state: cannot read state file .*state\.json: .*no such file or directory\n$`, r.stderr)
}

// TestStatusOfAMisnumberedJournal: a journal holding a line twice, as two
// runtimes appending to one directory leave it, makes status report the
// being's ledger and the family's as not exact, in the table and in the
// JSON, though the line repeats no money.
func TestStatusOfAMisnumberedJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", dir)
	require.Equal(t, 0, demo.code, demo.stderr)
	root := filepath.Join(dir, "state")
	path := filepath.Join(root, state.JournalFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	var repeated string
	for _, l := range lines {
		if strings.Contains(l, `"type":"warning"`) || strings.Contains(l, `"type":"cycle_started"`) {
			repeated = l
			break
		}
	}
	require.NotEmpty(t, repeated, "the demo journals a cycle_started")
	require.NoError(t, os.WriteFile(path, append(data, repeated...), 0o600))

	table := status(t, root)
	require.Equal(t, 0, table.code, table.stderr)
	out := strings.Split(strings.TrimRight(table.stdout, "\n"), "\n")
	assert.Regexp(t, `^Ada\s+\S+\s+\d+\s.*not exact: journal repeats seq \d+ after seq \d+`, out[1])
	assert.Regexp(t, `^family ledger: not exact: Ada's journal repeats seq \d+ after seq \d+$`, out[len(out)-1])

	js := status(t, root, "--format", "json")
	require.Equal(t, 0, js.code, js.stderr)
	s := parseStatus(t, js.stdout)
	assert.Regexp(t, `^not exact: Ada's journal repeats seq`, s.FamilyLedger)
	assert.Regexp(t, `^not exact: journal repeats seq`, s.Beings[0].Ledger)
}
