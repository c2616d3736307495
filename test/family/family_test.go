// Package family_test runs a whole family in process
// (docs/family.md#spawning, docs/debug.md#routes): the family actor with its
// brama gateway against the demo's simulated Brama, the root being Ada
// spawning Bo and Cy, Bo spawning Di, every being with the example Las as a
// real child process. It proves the family lives concurrently, shows itself
// on the debug endpoint, survives a killed Las process and a crashed child
// being, stops children first and resumes whole. BenchmarkFamilyScale
// measures what a being costs at scale.
package family_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var family4 = []string{"Ada", "Bo", "Cy", "Di"}

// allAtLeast holds when every being of the scripted family has framed at
// least n cycles.
func allAtLeast(n uint64) func(map[string]uint64) bool {
	return func(seen map[string]uint64) bool {
		for _, name := range family4 {
			if seen[name] < n {
				return false
			}
		}
		return true
	}
}

// shape renders the tree's kinds and being names, e.g.
// family(brama,being:Ada(ledger,las)).
func shape(n tree) string {
	s := n.Kind
	if n.Kind == "being" {
		s += ":" + n.Name
	}
	if len(n.Children) == 0 {
		return s
	}
	parts := make([]string, len(n.Children))
	for i, c := range n.Children {
		parts[i] = shape(c)
	}
	return s + "(" + strings.Join(parts, ",") + ")"
}

const wantShape = "family(brama,being:Ada(ledger,las,being:Bo(ledger,las,being:Di(ledger,las)),being:Cy(ledger,las)))"

// TestFamilyLivesAndRecovers runs the scripted family end to end. The
// steps share one family, so they run in order.
func TestFamilyLivesAndRecovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	w := startWorld(t, worldConfig{dir: dir})

	// All four beings cycle concurrently.
	w.progress.until(t, "every being to frame two cycles", allAtLeast(2))

	t.Run("debug tree", func(t *testing.T) { checkTree(t, w) })

	t.Run("a slow model call delays no other being", func(t *testing.T) {
		held, release := w.progress.holdBeing("Cy")
		defer release()
		select {
		case <-held:
		case <-time.After(longWait):
			t.Fatal("Cy never asked for a completion")
		}
		seen, _ := w.progress.snapshot()
		w.progress.until(t, "the others to go on while Cy waits", func(now map[string]uint64) bool {
			return now["Ada"] >= seen["Ada"]+2 && now["Bo"] >= seen["Bo"]+2 && now["Di"] >= seen["Di"]+2
		})
		cy, _ := w.actors().beingNode("Cy")
		assert.Equal(t, "model", cy.text("waiting_for"), "the tree shows what Cy waits for")
		now, _ := w.progress.snapshot()
		assert.Equal(t, seen["Cy"], now["Cy"], "Cy stayed in its cycle")
		release()
		w.progress.until(t, "Cy to go on once its call returns", func(now map[string]uint64) bool {
			return now["Cy"] > seen["Cy"]
		})
	})

	t.Run("Las killed from outside restarts", func(t *testing.T) {
		bo, ok := w.actors().beingNode("Bo")
		require.True(t, ok)
		lasNode, ok := bo.child("las")
		require.True(t, ok)
		pid := int(lasNode.number("process_id"))
		require.Positive(t, pid, "Bo's Las shows its process id")
		before := lasNode.number("restarts")
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

		after := w.treeUntil("Bo's Las to restart", func(n tree) bool {
			bo, _ := n.beingNode("Bo")
			l, _ := bo.child("las")
			return l.number("restarts") >= before+1 && l.number("process_id") > 0 && int(l.number("process_id")) != pid
		})
		bo, _ = after.beingNode("Bo")
		lasNode, _ = bo.child("las")
		assert.NotEmpty(t, lasNode.text("last_restart_reason"), "the tree says why Las restarted")
		atKill := w.progress.until(t, "anything", func(map[string]uint64) bool { return true })["Bo"]
		w.progress.until(t, "Bo to carry on after its Las restarted", func(seen map[string]uint64) bool {
			return seen["Bo"] >= atKill+2
		})
		assert.Equal(t, 0.0, bo.number("restarts"), "Bo itself did not restart")
	})

	t.Run("child being panics and restarts from its saved state", func(t *testing.T) {
		n := w.actors()
		cy, ok := n.beingNode("Cy")
		require.True(t, ok)
		require.Equal(t, 0.0, cy.number("restarts"))
		seen, _ := w.progress.snapshot()
		w.system.Root.Send(w.pidOf(cy), messages.InjectPanic{})

		after := w.treeUntil("Cy's restart to show", func(n tree) bool {
			cy, _ := n.beingNode("Cy")
			return cy.number("restarts") >= 1 && cy.Status == state.StatusRunning
		})
		cy, _ = after.beingNode("Cy")
		assert.Contains(t, cy.text("last_failure"), "injected panic")
		w.progress.until(t, "Cy to go on cycling", func(now map[string]uint64) bool {
			return now["Cy"] >= seen["Cy"]+2 && now["Ada"] > seen["Ada"] && now["Bo"] > seen["Bo"] && now["Di"] > seen["Di"]
		})
		after = w.actors()
		assert.Equal(t, wantShape, shape(after), "the tree is whole again")
		for _, name := range []string{"Ada", "Bo", "Di"} {
			b, _ := after.beingNode(name)
			assert.Equal(t, 0.0, b.number("restarts"), "%s was not restarted", name)
		}
	})

	stopped := w.shutdown()
	require.Equal(t, state.StatusStopped, stopped.Status, "%v", stopped.Err)
	first := checkFiles(t, dir)

	// Only Cy's being actor restarted, so only Cy has a second "started".
	for name, wantStarts := range map[string]int{"Ada": 1, "Bo": 1, "Cy": 2, "Di": 1} {
		assert.Equal(t, wantStarts, testkit.Count(first[name].events, state.EventStarted), "%s started events", name)
	}

	t.Run("resume restores the whole family", func(t *testing.T) {
		w2 := startWorld(t, worldConfig{dir: dir, resume: true})
		w2.progress.until(t, "every being to go on past its last cycle", func(seen map[string]uint64) bool {
			for _, name := range family4 {
				if seen[name] < first[name].st.Cycle+1 {
					return false
				}
			}
			return true
		})
		assert.Equal(t, wantShape, shape(w2.actors()))
		require.Equal(t, state.StatusStopped, w2.shutdown().Status)
		second := checkFiles(t, dir)
		for _, name := range family4 {
			a, b := first[name].st, second[name].st
			assert.Greater(t, b.Cycle, a.Cycle, "%s's cycle counter continues", name)
			assert.True(t, b.Budget.Starting.Equal(a.Budget.Starting), "%s keeps its starting budget", name)
			assert.GreaterOrEqual(t, b.Budget.APISpent.Cmp(a.Budget.APISpent), 1, "%s's spending continues", name)
			assert.GreaterOrEqual(t, b.Budget.Earned.Cmp(a.Budget.Earned), 0, "%s's earnings are kept", name)
			assert.GreaterOrEqual(t, b.Budget.TotalTokens, a.Budget.TotalTokens)
			assert.Equal(t, a.Mind.Children, b.Mind.Children, "%s's children are the same", name)
		}

		// Once the family is gone, the endpoint says so within its
		// deadline instead of hanging.
		start := time.Now()
		gone := debug.Collect(context.Background(), w2.system.Root, w2.family, 500*time.Millisecond)
		assert.Less(t, time.Since(start), 5*time.Second, "collecting a gone family is bounded by the deadline")
		assert.Equal(t, debug.StatusUnresponsive, gone.Status)
		assert.Empty(t, gone.Children)
	})

	t.Run("resume finds children by id and lives on without a missing one", func(t *testing.T) {
		// Bo's record loses its path (found under children/<id>), Cy's
		// directory is gone (a journaled warning, not a boot failure).
		ada, err := state.Load(dir)
		require.NoError(t, err)
		require.Len(t, ada.Mind.Children, 2)
		ada.Mind.Children[0].StateDir = ""
		store, err := state.Open(dir)
		require.NoError(t, err)
		require.NoError(t, store.Save(ada))
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "children", ada.Mind.Children[1].ID)))
		before := checkFilesOf(t, dir, 3)

		w3 := startWorld(t, worldConfig{dir: dir, resume: true})
		w3.progress.until(t, "Ada, Bo and Di to go on", func(seen map[string]uint64) bool {
			for _, name := range []string{"Ada", "Bo", "Di"} {
				if seen[name] <= before[name].st.Cycle {
					return false
				}
			}
			return true
		})
		assert.Equal(t, "family(brama,being:Ada(ledger,las,being:Bo(ledger,las,being:Di(ledger,las))))", shape(w3.actors()))
		require.Equal(t, state.StatusStopped, w3.shutdown().Status)
		after := checkFilesOf(t, dir, 3)
		warned := false
		for _, e := range after["Ada"].events {
			warned = warned || e.Type == state.EventWarning && strings.HasPrefix(e.Message, "child Cy cannot be resumed")
		}
		assert.True(t, warned, "Ada journals the missing child")
	})
}

// TestFamilyEndsWhenGatewayStops: a family without its gateway cannot
// think, so it stops every being gracefully and ends as failed.
func TestFamilyEndsWhenGatewayStops(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	w := startWorld(t, worldConfig{dir: dir, noLas: true})
	w.progress.until(t, "Ada and Bo to cycle", func(seen map[string]uint64) bool { return seen["Ada"] >= 2 && seen["Bo"] >= 1 })
	gw, ok := w.actors().child("brama")
	require.True(t, ok)
	w.system.Root.Stop(w.pidOf(gw))

	deadline := time.NewTimer(longWait)
	defer deadline.Stop()
	for w.stopped == nil {
		select {
		case ev := <-w.events:
			if s, ok := ev.(messages.FamilyStopped); ok {
				w.stopped = &s
			}
		case <-deadline.C:
			t.Fatal("the family did not end")
		}
	}
	assert.Equal(t, state.StatusFailed, w.stopped.Status)
	assert.EqualError(t, w.stopped.Err, "runtime: brama gateway stopped unexpectedly")
	for name, f := range checkFilesOf(t, dir, 0) {
		assert.Equal(t, 1, testkit.Count(f.events, state.EventStarted), name)
	}
}

// checkTree compares the live debug tree, as JSON and as text, with the
// scripted family.
func checkTree(t *testing.T, w *world) {
	n := w.actors()
	require.Equal(t, wantShape, shape(n))
	assert.Equal(t, "family", n.Name)
	assert.Equal(t, "running", n.Status)
	// The family's money, added up from the live tree
	// (docs/money.md#the-family-ledger): every child was endowed by its
	// parent, so the family holds the root's 1 USD plus what it earned.
	assert.Equal(t, "exact", n.text("family_ledger"), "family figures %v", n.Figures)
	assert.Equal(t, "1", n.text("family_starting"))
	assert.Positive(t, testkit.USD(n.text("family_granted")).Sign())
	br, _ := n.child("brama")
	assert.Equal(t, "brama", br.Name)
	assert.Positive(t, br.number("completed"), "the gateway counts completions")
	assert.Contains(t, br.Figures, "in_flight")
	assert.Contains(t, br.Figures, "errors")

	var walk func(n tree, depth int)
	walk = func(n tree, depth int) {
		assert.NotEqual(t, "unresponsive", n.Status, "%s %s", n.Kind, n.PID)
		switch n.Kind {
		case "being":
			assert.Equal(t, state.StatusRunning, n.Status, n.Name)
			assert.Positive(t, n.number("cycle"), "%s cycle", n.Name)
			for _, key := range []string{"balance", "starting", "spent", "earned", "granted", "remaining", "current_model", "last_action", "restarts", "last_failure"} {
				assert.Contains(t, n.Figures, key, "%s figures", n.Name)
			}
			_, err := money.Parse(n.text("balance"))
			assert.NoError(t, err, "%s balance is a decimal string", n.Name)
			assert.Equal(t, "any", n.text("current_model"))
			if depth > 1 {
				assert.True(t, strings.Contains(n.PID, "/being-"+n.Name+"-"), "child pid reads as a path: %s", n.PID)
			}
		case "ledger":
			assert.Equal(t, "solvent", n.Status)
			for _, key := range []string{"remaining", "spent", "earned"} {
				assert.Contains(t, n.Figures, key)
			}
		case "las":
			assert.Equal(t, "las", n.Name)
			assert.Positive(t, n.number("process_id"))
			assert.Positive(t, n.number("tool_count"))
			assert.Contains(t, n.Figures, "restarts")
			assert.Contains(t, n.Figures, "last_restart_reason")
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	ada, _ := n.beingNode("Ada")
	assert.Equal(t, "family/root", ada.PID)
	l, _ := ada.child("ledger")
	assert.Equal(t, "family/root/ledger", l.PID)

	// The text format lists the same tree, one node per line, two spaces
	// of indent per level: kind, quoted name, status, key=value figures.
	text := strings.Split(strings.TrimSuffix(string(w.get("/debug/actors?format=text")), "\n"), "\n")
	var want []string
	var lines func(n tree, depth int)
	lines = func(n tree, depth int) {
		want = append(want, strings.Repeat("  ", depth)+n.Kind+" "+strconv.Quote(n.Name)+" ")
		for _, c := range n.Children {
			lines(c, depth+1)
		}
	}
	lines(n, 0)
	require.Len(t, text, len(want), strings.Join(text, "\n"))
	for i, prefix := range want {
		assert.True(t, strings.HasPrefix(text[i], prefix), "line %d %q starts with %q", i, text[i], prefix)
		switch {
		case strings.Contains(prefix, "being "):
			assert.Contains(t, text[i], " cycle=")
			assert.Contains(t, text[i], " balance=")
		case strings.Contains(prefix, "las "):
			assert.Contains(t, text[i], " process_id=")
			assert.Contains(t, text[i], " restarts=")
		case strings.Contains(prefix, "ledger "):
			assert.Contains(t, text[i], " remaining=")
		case strings.Contains(prefix, "brama "):
			assert.Contains(t, text[i], " errors.transient=")
		}
	}
}

// beingFiles is one being's state and journal as found on disk.
type beingFiles struct {
	dir    string
	st     *state.Being
	events []state.Event
}

// checkFiles walks the family's state directories from the root and
// checks every being after a graceful stop: status stopped, journal
// ending in stopped, the ledger invariant over the whole journal, 0700
// directories under <parent>/children/<uuid>/, the parent's record of
// each child, and each child's stopped event before its parent's.
func checkFiles(t *testing.T, root string) map[string]beingFiles {
	t.Helper()
	out := checkFilesOf(t, root, 4)
	children := func(name string) []string {
		var names []string
		for _, c := range out[name].st.Mind.Children {
			names = append(names, c.Name)
		}
		return names
	}
	assert.Equal(t, []string{"Bo", "Cy"}, children("Ada"))
	assert.Equal(t, []string{"Di"}, children("Bo"))
	assert.Empty(t, children("Cy"))
	assert.Empty(t, children("Di"))
	return out
}

// checkFilesOf is checkFiles for a family of n beings on disk, whatever
// its shape; a recorded child whose directory is gone is skipped.
func checkFilesOf(t *testing.T, root string, n int) map[string]beingFiles {
	t.Helper()
	out := map[string]beingFiles{}
	var walk func(dir string) beingFiles
	walk = func(dir string) beingFiles {
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "mode of %s", dir)
		st, err := state.Load(dir)
		require.NoError(t, err)
		events := testkit.Journal(t, dir)
		name := st.Identity.Name
		f := beingFiles{dir: dir, st: st, events: events}
		out[name] = f

		if !assert.Equal(t, state.StatusStopped, st.Status, "%s status", name) {
			raw, _ := os.ReadFile(testkit.JournalPath(dir))
			t.Logf("%s's journal:\n%s", name, tail(string(raw), 40))
		}
		require.NotEmpty(t, events)
		last := events[len(events)-1]
		assert.Equal(t, state.EventStopped, last.Type, "%s's journal ends with stopped", name)
		assert.Equal(t, state.StatusStopped, last.Status)
		assert.Equal(t, st.Cycle, last.Cycle)
		assert.NoError(t, testkit.CheckInvariant(st.Budget, events), "%s ledger invariant", name)
		checkCycles(t, name, events)
		checkConversation(t, name, st.Conversation)
		checkWorkspaceNote(t, filepath.Dir(root), name, events)

		for _, rec := range st.Mind.Children {
			childDir := filepath.Join(dir, "children", rec.ID)
			if _, err := os.Stat(childDir); os.IsNotExist(err) {
				continue
			}
			if rec.StateDir != "" {
				assert.Equal(t, state.ChildRecordDir(rec.ID), rec.StateDir, "%s records %s's directory, relative to its own", name, rec.Name)
			}
			assert.Equal(t, state.StatusRunning, rec.Status)
			assert.False(t, rec.CreatedAt.IsZero())
			child := walk(childDir)
			assert.Equal(t, rec.Name, child.st.Identity.Name)
			assert.Equal(t, st.Identity.AgentID, child.st.Identity.AgentID, "a child inherits the configured identity")
			assert.NotEqual(t, st.Mind.SystemPrompt, child.st.Mind.SystemPrompt, "a child has its own persona")
			childStop := child.events[len(child.events)-1].At.Time
			assert.True(t, childStop.Before(last.At.Time), "%s stopped (%s) before its parent %s (%s)", rec.Name, childStop, name, last.At)
		}
		return f
	}
	walk(root)
	if n > 0 {
		assert.Len(t, out, n, "the whole family is on disk")
	}
	return out
}

// checkWorkspaceNote asserts that a being whose journal records a
// successful file write left the simulated policy's note in the shared
// workspace (beside the root's state directory), with its own name in it.
func checkWorkspaceNote(t *testing.T, base, name string, events []state.Event) {
	t.Helper()
	for _, e := range events {
		if e.Type != state.EventToolFinished || e.Tool != "singularity_file_write" || e.Status != "success" {
			continue
		}
		note, err := os.ReadFile(filepath.Join(base, "workspace", "notes", name+"-cycle-1.md"))
		if assert.NoError(t, err, "%s's workspace note", name) {
			assert.Contains(t, string(note), name)
		}
		return
	}
}

// checkCycles asserts the journal's cycle counter never goes back: each
// cycle_started is one more than the last, across restarts and resumes.
func checkCycles(t *testing.T, name string, events []state.Event) {
	var last uint64
	for _, e := range events {
		if e.Type != state.EventCycleStarted {
			continue
		}
		if !assert.Equal(t, last+1, e.Cycle, "%s cycles continue", name) {
			return
		}
		last = e.Cycle
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkConversation asserts every tool call of an assistant message is
// answered by a tool message before the next assistant or user message,
// as an OpenAI-compatible Brama requires.
func checkConversation(t *testing.T, name string, conv []chat.Message) {
	open := map[string]bool{}
	for i, m := range conv {
		switch m.Role {
		case chat.RoleTool:
			assert.True(t, open[m.ToolCallID], "%s message %d answers an unknown call %s", name, i, m.ToolCallID)
			delete(open, m.ToolCallID)
			continue
		case chat.RoleAssistant, chat.RoleUser:
			assert.Empty(t, open, "%s message %d (%s) follows unanswered tool calls", name, i, m.Role)
			open = map[string]bool{}
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
}
