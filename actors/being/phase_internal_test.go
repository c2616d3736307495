package being

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// beingJournal returns the being's journal as written so far.
func beingJournal(t *testing.T, b *Being) []state.Event {
	t.Helper()
	return testkit.Journal(t, b.opts.StateDir)
}

func journalWarnings(events []state.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == "warning" {
			out = append(out, e.Message)
		}
	}
	return out
}

func savedStatus(t *testing.T, b *Being) string {
	t.Helper()
	saved, err := state.Load(b.opts.StateDir)
	require.NoError(t, err)
	return saved.Status
}

// TestShutdownInEveryWait stops a being without waiting while its cycle
// waits on each kind of step: the step is abandoned with one warning, the
// call in flight is closed as indeterminate, the call not started as
// not_run, every call has exactly one answer, and the being stops.
func TestShutdownInEveryWait(t *testing.T) {
	inFlight := outcome.Unknown("shutdown", "the being shut down while this call was in flight").Envelope()
	notRun := outcome.Failure("not_run", "the being shut down before this call ran").Envelope()
	tests := []struct {
		wait waitFor
		tool string // the first call's tool
		// answered: the first call finished before the stop (model and
		// nothing); else it is the call in flight.
		answered bool
		warning  string
	}{
		{waitModel, "echo__echo", true, "abandoned model call in flight: shutdown without waiting"},
		{waitLas, "echo__echo", false, "abandoned las call in flight: shutdown without waiting"},
		{waitMost, "most_send_message", false, "abandoned most call in flight: shutdown without waiting"},
		{waitModels, "singularity_self_switch_model", false, "abandoned models call in flight: shutdown without waiting"},
		{waitFile, "singularity_file_read", false, "abandoned file call in flight: shutdown without waiting"},
		{waitChild, "singularity_spawn_child", false, "abandoned child call in flight: shutdown without waiting"},
		{waitNothing, "singularity_memory_recall", true, ""},
	}
	for _, tc := range tests {
		t.Run("waiting for "+tc.wait.String(), func(t *testing.T) {
			b := loadedBeing(t)
			ctx := &stepContext{}
			calls := []chat.ToolCall{call("first", tc.tool), call("second", "singularity_memory_recall")}
			say(b, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})
			b.cycle = &cycleRun{round: 1, calls: calls, next: 1, waiting: tc.wait}
			if tc.answered {
				say(b, chat.Message{Role: chat.RoleTool, ToolCallID: "first", Name: tc.tool, Content: "{}"})
			}
			if tc.wait == waitModel {
				// The round's calls all ran; the next completion is asked.
				say(b, chat.Message{Role: chat.RoleTool, ToolCallID: "second", Name: calls[1].Function.Name, Content: "{}"})
				b.cycle.next = 2
			}
			b.phase = phaseCycling
			epoch := b.epoch

			b.handleStop(ctx, messages.StopBeing{Now: true})

			assert.Equal(t, phaseStopped, b.phase)
			assert.NotEqual(t, epoch, b.epoch, "the abandoned step's continuation is invalidated")
			assert.Equal(t, map[string]int{"first": 1, "second": 1}, resultsFor(b.st.Conversation))
			byID := map[string]string{}
			for _, m := range b.st.Conversation {
				if m.Role == chat.RoleTool {
					byID[m.ToolCallID] = m.Content
				}
			}
			if !tc.answered {
				assert.Equal(t, inFlight, byID["first"])
			}
			if tc.wait != waitModel {
				assert.Equal(t, notRun, byID["second"])
			}
			warnings := journalWarnings(beingJournal(t, b))
			if tc.warning == "" {
				assert.Empty(t, warnings)
			} else {
				assert.Equal(t, []string{tc.warning}, warnings)
			}
			assert.Equal(t, state.StatusStopped, savedStatus(t, b))
		})
	}
}

// TestShutdownLadder walks the phases of a shutdown from idle: children
// first, then Las, then the final save.
func TestShutdownLadder(t *testing.T) {
	b := loadedBeing(t)
	ctx := &stepContext{}
	child := actor.NewPID("test", "being/being-Bo-1")
	lasPID := actor.NewPID("test", "being/las")
	b.children = []*childRef{{id: "c1", name: "Bo", pid: child}}
	b.las.pid = lasPID
	b.phase = phaseIdle

	b.handleStop(ctx, messages.StopBeing{})
	require.Equal(t, phaseStoppingChildren, b.phase)
	assert.Equal(t, []any{messages.StopBeing{}}, ctx.sent, "the child is told to stop")
	assert.Empty(t, ctx.stopped, "Las waits for the children")
	assert.Equal(t, state.StatusStopping, b.st.Status)
	assert.Equal(t, state.StatusStarting, savedStatus(t, b), "stopping becomes durable only with the final step")

	b.handleStop(ctx, messages.StopBeing{})
	assert.Equal(t, phaseStoppingChildren, b.phase, "a second stop does not skip the children")
	assert.Len(t, ctx.sent, 1)

	b.handleChildStopped(ctx, messages.BeingStopped{ID: "c1", Name: "Bo", Status: state.StatusStopped})
	require.Equal(t, phaseStoppingLas, b.phase)
	assert.Equal(t, []*actor.PID{child, lasPID}, ctx.stopped, "the child's actor, then Las")

	b.handleTerminated(ctx, &actor.Terminated{Who: lasPID})
	require.Equal(t, phaseStopped, b.phase)
	assert.Equal(t, state.StatusStopped, savedStatus(t, b))
	assert.Empty(t, journalWarnings(beingJournal(t, b)), "Las stopped by the shutdown is no warning")
}

// TestShutdownWhileBooting: a stop before the boot step (Las still
// starting) stops Las and ends the being without a cycle and without
// writing anything: a boot that did not complete leaves the directory as
// it was. A later stop is answered again.
func TestShutdownWhileBooting(t *testing.T) {
	b := loadedBeing(t)
	b.booted = false
	ctx := &stepContext{}
	lasPID := actor.NewPID("test", "being/las")
	b.las.pid, b.las.link = lasPID, lasStarting
	require.Equal(t, phaseBooting, b.phase)
	before := testkit.Snapshot(t, b.opts.StateDir)

	b.handleStop(ctx, messages.StopBeing{})
	require.Equal(t, phaseStoppingLas, b.phase)
	assert.Equal(t, []*actor.PID{lasPID}, ctx.stopped)
	b.handleTerminated(ctx, &actor.Terminated{Who: lasPID})
	require.Equal(t, phaseStopped, b.phase)
	assert.Equal(t, uint64(0), b.st.Cycle)
	assert.Equal(t, before, testkit.Snapshot(t, b.opts.StateDir), "nothing was written")

	// Las's catalogue answer, arriving late, changes nothing.
	b.continueShutdown(ctx)
	assert.Equal(t, phaseStopped, b.phase)

	b.startCycle(ctx)
	assert.Equal(t, phaseStopped, b.phase, "a late tick starts nothing")
	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, phaseStopped, b.phase)
}

// TestDraining: a stop during a cycle waits for the round boundary; the
// grace, when it passes first, abandons the step in flight.
func TestDraining(t *testing.T) {
	t.Run("round boundary", func(t *testing.T) {
		b := loadedBeing(t)
		b.opts.ShutdownGrace = time.Hour
		ctx := &stepContext{}
		b.cycle = &cycleRun{round: 1}
		b.phase = phaseCycling

		b.handleStop(ctx, messages.StopBeing{})
		require.Equal(t, phaseDraining, b.phase)
		require.NotNil(t, b.stop.graceTimer)

		b.startRound(ctx)
		assert.Equal(t, phaseStopped, b.phase)
		assert.Empty(t, journalWarnings(beingJournal(t, b)), "nothing was abandoned")
	})
	t.Run("grace expires", func(t *testing.T) {
		b := loadedBeing(t)
		b.opts.ShutdownGrace = time.Hour
		ctx := &stepContext{}
		b.cycle = &cycleRun{round: 1, waiting: waitModel}
		b.phase = phaseCycling

		b.handleStop(ctx, messages.StopBeing{})
		require.Equal(t, phaseDraining, b.phase)
		b.handleGraceExpired(ctx, graceExpired{epoch: b.epoch - 1})
		require.Equal(t, phaseDraining, b.phase, "a stale grace timer does nothing")

		b.handleGraceExpired(ctx, graceExpired{epoch: b.epoch})
		assert.Equal(t, phaseStopped, b.phase)
		assert.Equal(t, []string{"abandoned model call in flight: shutdown grace expired"}, journalWarnings(beingJournal(t, b)))
	})
}

// TestLasLink: Las's end is journaled once with its reason, whether the
// termination or the reason arrives first, and its tools leave the
// catalogue.
func TestLasLink(t *testing.T) {
	for _, terminationFirst := range []bool{true, false} {
		b := loadedBeing(t)
		ctx := &stepContext{}
		b.las.pid = actor.NewPID("test", "being/las")
		b.las.link = lasUp
		b.las.tools = []chat.Tool{{Type: "function", Function: chat.Function{Name: "echo__echo", Description: "echo", Parameters: []byte(`{"type":"object"}`)}}}
		require.NoError(t, b.rebuildCatalog())
		b.phase = phaseIdle
		withLas := b.toolCount()

		unavailable := messages.LasUnavailable{Reason: "restart intensity exceeded"}
		if terminationFirst {
			b.handleTerminated(ctx, &actor.Terminated{Who: b.las.pid})
			assert.Equal(t, lasLost, b.las.link)
			b.handleLasEvent(ctx, unavailable)
		} else {
			b.handleLasEvent(ctx, unavailable)
			b.handleTerminated(ctx, &actor.Terminated{Who: b.las.pid})
		}
		b.handleLasEvent(ctx, unavailable)
		b.flushWarnings(ctx) // what Receive does after every message
		assert.Equal(t, lasGone, b.las.link)
		assert.Equal(t, withLas-1, b.toolCount())
		assert.Equal(t, []string{unavailable.String()}, journalWarnings(beingJournal(t, b)))
		assert.Equal(t, phaseIdle, b.phase, "the being lives on with built-in tools")
	}
}

// TestStopNowGivesUpOnStorage: storage fails for good while a tool's
// step is held; a stop that does not wait gives the step up, writes
// nothing more and stops, and the next load closes the call left open.
func TestStopNowGivesUpOnStorage(t *testing.T) {
	clock := testkit.NewStepClock()
	broken := errors.New("no space left on device")
	var full atomic.Bool
	b := loadedBeing(t, func(o *Options) {
		o.Clock = clock
		o.StorageFault = func(string) error {
			if full.Load() {
				return broken
			}
			return nil
		}
	})
	ctx := &stepContext{}
	calls := []chat.ToolCall{call("a", "singularity_memory_recall"), call("b", "singularity_memory_recall")}
	// The completion asking for both calls is durable.
	b.commit(ctx, []state.Event{state.ModelCompleted(b.opts.now(), 0, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})}, nextNothing)
	b.cycle = &cycleRun{round: 1, calls: calls, next: 1}
	b.phase = phaseCycling
	full.Store(true)
	before := testkit.Snapshot(t, b.opts.StateDir)

	finished := state.ToolFinished(b.opts.now(), 0, "singularity_memory_recall", outcome.Success)
	finished.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: "a", Name: "singularity_memory_recall", Content: "{}"}
	b.commitTool(ctx, []state.Event{finished}, toolResult{})
	require.True(t, b.engine.Storage().Failing, "the step is held")
	retry := clock.Next(t, time.Second)
	assert.Equal(t, time.Second, retry.After)
	assert.Empty(t, resultsFor(b.st.Conversation), "nothing of the held step took effect")

	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, phaseStopped, b.phase)
	assert.False(t, retry.Fire(), "the retry was cancelled")
	assert.Equal(t, before, testkit.Snapshot(t, b.opts.StateDir), "nothing was written")

	again := New(b.opts)
	require.NoError(t, again.load(nil))
	t.Cleanup(again.handleStopping)
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, resultsFor(again.st.Conversation), "the load closed both open calls")
}

// TestNextWait: the sleep before the next cycle after n failing cycles
// in a row doubles from the interval (at least 1 s) up to 5 min, or up
// to 30 s after a transient gateway failure, and is never shorter than
// the interval itself.
func TestNextWait(t *testing.T) {
	tests := []struct {
		interval time.Duration
		failed   int
		gateway  bool
		want     time.Duration
	}{
		{0, 0, false, 0},
		{5 * time.Second, 0, false, 5 * time.Second},
		{0, 1, false, time.Second},
		{0, 2, false, 2 * time.Second},
		{0, 9, false, 256 * time.Second},
		{0, 10, false, 5 * time.Minute},
		{0, 1000, false, 5 * time.Minute},
		{3 * time.Second, 1, false, 3 * time.Second},
		{3 * time.Second, 3, false, 12 * time.Second},
		{10 * time.Minute, 1, false, 10 * time.Minute},
		{10 * time.Minute, 4, false, 10 * time.Minute},
		{0, 5, true, 16 * time.Second},
		{0, 6, true, 30 * time.Second},
		{0, 1000, true, 30 * time.Second},
		{20 * time.Second, 2, true, 30 * time.Second},
		{time.Minute, 3, true, time.Minute},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, nextWait(tc.interval, tc.failed, tc.gateway), "interval %v, %d failed, gateway %v", tc.interval, tc.failed, tc.gateway)
	}
}

// TestTornJournalRepairedOnlyByTheBootStep: a journal whose last line a
// crash tore is read without writing; a boot refused after the load
// leaves it byte for byte as it was, and the boot step of a boot that
// passes cuts the torn bytes and journals the repair with itself.
func TestTornJournalRepairedOnlyByTheBootStep(t *testing.T) {
	b := loadedBeing(t)
	ctx := &stepContext{}
	b.commit(ctx, []state.Event{state.Started(b.opts.now())}, nextNothing)
	b.handleStopping()
	path := filepath.Join(b.opts.StateDir, state.JournalFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"cycle_sta`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := testkit.Snapshot(t, b.opts.StateDir)

	refused := New(b.opts)
	refused.opts.inline = true
	require.NoError(t, refused.load(nil))
	refused.handleStopping() // the boot is refused after the load
	assert.Equal(t, before, testkit.Snapshot(t, b.opts.StateDir), "loading wrote nothing")

	booted := New(b.opts)
	booted.opts.inline = true
	require.NoError(t, booted.load(nil))
	t.Cleanup(booted.handleStopping)
	booted.commitBoot(ctx)
	events, err := state.ReadJournal(path)
	require.NoError(t, err, "the torn bytes are gone")
	assert.Equal(t, []string{"started", "warning", "started"}, testkit.Types(events))
	assert.Equal(t, "activity journal: removed a torn last line of 18 bytes", events[1].Message)
}
