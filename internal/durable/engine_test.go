package durable

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// timers is a backoff clock the test fires by hand.
type timers struct{ due []func() }

func (c *timers) after(_ time.Duration, f func()) func() bool {
	c.due = append(c.due, f)
	return func() bool { return true }
}

// journalFault is a state.Fault that counts the journal's appends and
// fails them while refuse is set: a disk that comes and goes.
type journalFault struct {
	refuse  atomic.Bool
	appends atomic.Int32
}

func (f *journalFault) fault(file string) error {
	if file != state.JournalFile {
		return nil
	}
	if f.refuse.Load() {
		return errors.New("disk gone")
	}
	f.appends.Add(1)
	return nil
}

// TestFailedAppendIsHeldAndRetried: a step is durable only once the
// journal took it; one whose append fails is held, answered Unavailable,
// retried on the backoff and answered Committed once it goes through,
// with the storage warning queued for the next step.
func TestFailedAppendIsHeldAndRetried(t *testing.T) {
	dir := testkit.BootedDir(t)
	clock := &timers{}
	disk := &journalFault{}
	e, _, err := Open(dir, Config{Inline: true, AfterFunc: clock.after, Fault: disk.fault})
	require.NoError(t, err)
	defer e.Close()

	at := state.Now()
	out := e.Step(7, []state.Event{state.Started(at)}, at, 0)
	require.Len(t, out, 1)
	c, ok := out[0].(Committed)
	require.True(t, ok, "%#v", out[0])
	assert.Equal(t, Tag(7), c.Tag)
	require.Len(t, c.Events, 1)
	assert.Equal(t, uint64(1), c.Events[0].Seq)
	assert.Equal(t, int32(1), disk.appends.Load())

	disk.refuse.Store(true)
	out = e.Step(8, []state.Event{state.Warning(at, 1, "hello")}, at, 1)
	require.Len(t, out, 1)
	u, ok := out[0].(Unavailable)
	require.True(t, ok, "%#v", out[0])
	assert.Equal(t, 1, u.Attempts)
	assert.True(t, e.Busy(), "the step is held in the slot")
	assert.True(t, e.Storage().Failing)
	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	assert.Len(t, events, 1, "nothing of the held step is in the journal")

	disk.refuse.Store(false)
	require.Len(t, clock.due, 1)
	// The backoff's timer posts a retry; inline, the test hands it over.
	retry := Signal{e: e, kind: writeRetry, id: e.slot.id}
	out = e.Handle(retry)
	require.Len(t, out, 2)
	assert.Equal(t, Recovered{Attempts: 1}, out[0])
	c, ok = out[1].(Committed)
	require.True(t, ok)
	assert.Equal(t, Tag(8), c.Tag)
	assert.Equal(t, uint64(2), c.Events[0].Seq)
	assert.False(t, e.Busy())
	assert.False(t, e.Storage().Failing)
	assert.True(t, e.Warnings(), "the failure's warning waits for the next step")
	assert.Empty(t, e.Handle(retry), "a retry of a write that landed is ignored")

	out = e.Step(9, nil, at, 1)
	c = out[0].(Committed)
	require.Len(t, c.Events, 1)
	assert.Equal(t, "storage unavailable: state: cannot append to "+filepath.Join(dir, state.JournalFile)+": disk gone", c.Events[0].Message)
	assert.Equal(t, 1, c.Events[0].Repeats)
}

// TestDropHeldGivesUpTheStep: a step held for storage is given up whole
// by DropHeld, and the engine takes new writes afterwards.
func TestDropHeldGivesUpTheStep(t *testing.T) {
	dir := testkit.BootedDir(t)
	var full atomic.Bool
	clock := &timers{}
	e, _, err := Open(dir, Config{Inline: true, AfterFunc: clock.after, Fault: func(file string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	require.NoError(t, err)
	defer e.Close()
	at := state.Now()
	assert.False(t, e.DropHeld(), "nothing is held")

	full.Store(true)
	out := e.Step(1, []state.Event{state.Started(at)}, at, 0)
	require.IsType(t, Unavailable{}, out[0])
	assert.True(t, e.DropHeld())
	assert.False(t, e.Busy())

	full.Store(false)
	out = e.Step(2, []state.Event{state.Started(at)}, at, 0)
	c := out[len(out)-1].(Committed)
	assert.Equal(t, uint64(1), c.Events[0].Seq, "the dropped step took no seq in the journal")
	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	assert.Len(t, events, 1)
}

// TestCheckpointIsAppliedOnlyWhenNewest: a checkpoint in the slot
// answers Landed (applied, with its seq) and Checkpointed with the
// window kept, and its state.json includes every event journaled.
func TestCheckpointIsAppliedOnlyWhenNewest(t *testing.T) {
	dir := testkit.BootedDir(t)
	e, st, err := Open(dir, Config{Inline: true})
	require.NoError(t, err)
	defer e.Close()
	at := state.Now()
	for range 3 {
		out := e.Step(0, []state.Event{state.Warning(at, 0, "w")}, at, 0)
		st.Apply(out[0].(Committed).Events[0])
	}
	assert.False(t, e.CheckpointDue())
	snapshot := *st
	snapshot.UpdatedAt = at
	out := e.Checkpoint(5, snapshot, nil, nil, true)
	require.Len(t, out, 2, "inline, a background checkpoint is written in the slot")
	assert.Equal(t, Landed{Applied: true, Seq: 3, UpdatedAt: at}, out[0])
	assert.Equal(t, Checkpointed{Tag: 5}, out[1])
	assert.Equal(t, uint64(3), e.checkpointed)
	saved, err := state.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), saved.Seq())
}

// fenceRecorder is a Fence that records the seqs it is asked for and
// refuses while refuse is set.
type fenceRecorder struct {
	refuse atomic.Bool
	asked  []uint64
}

func (f *fenceRecorder) Fence(last uint64) error {
	f.asked = append(f.asked, last)
	if f.refuse.Load() {
		return errors.New("outcome unknown")
	}
	return nil
}

// TestStepCountsOnlyOnceFenced: with a Fence, a step is Committed only
// once the fence accepted the seq of its last event, and a checkpoint is
// not fenced. A step the fence refuses is Fenced, appended but never
// applied, and final: the engine writes nothing more, neither the next
// step nor a checkpoint, and asks the fence nothing more.
func TestStepCountsOnlyOnceFenced(t *testing.T) {
	dir := testkit.BootedDir(t)
	clock := &timers{}
	fence := &fenceRecorder{}
	e, st, err := Open(dir, Config{Inline: true, AfterFunc: clock.after, Fence: fence})
	require.NoError(t, err)
	defer e.Close()
	at := state.Now()

	out := e.Step(1, []state.Event{state.Started(at), state.Warning(at, 0, "a")}, at, 0)
	require.IsType(t, Committed{}, out[0])
	assert.Equal(t, []uint64{2}, fence.asked, "the fence is asked for the step's last seq")
	snapshot := *st
	snapshot.UpdatedAt = at
	out = e.Checkpoint(2, snapshot, nil, nil, false)
	require.IsType(t, Landed{}, out[0])
	assert.Len(t, fence.asked, 1, "a checkpoint is not fenced")
	before, err := os.ReadFile(filepath.Join(dir, state.StateFile))
	require.NoError(t, err)

	fence.refuse.Store(true)
	out = e.Step(3, []state.Event{state.Warning(at, 0, "b")}, at, 0)
	require.Len(t, out, 1)
	f, ok := out[0].(Fenced)
	require.True(t, ok, "%#v", out)
	assert.EqualError(t, f.Err, "outcome unknown")
	assert.False(t, e.Busy(), "a fenced step is not held for a retry")
	assert.Empty(t, clock.due, "no backoff is armed")
	require.Error(t, e.Fenced())

	out = e.Step(4, []state.Event{state.Warning(at, 0, "c")}, at, 0)
	assert.Equal(t, []Event{Fenced{Err: f.Err}}, out, "every later step is Fenced at once")
	out = e.Checkpoint(5, snapshot, nil, nil, false)
	assert.Equal(t, []Event{Fenced{Err: f.Err}}, out, "and so is every checkpoint")
	assert.Equal(t, []uint64{2, 3}, fence.asked)

	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	assert.Len(t, events, 3, "the refused step is appended once, and nothing after it")
	after, err := os.ReadFile(filepath.Join(dir, state.StateFile))
	require.NoError(t, err)
	assert.Equal(t, before, after, "state.json is not written after the refusal")
}

// secretEngine opens an inline engine on a booted directory, with key
// its one secret; it is closed when the test ends.
func secretEngine(t *testing.T, key string) (*Engine, *state.Being, string) {
	t.Helper()
	dir := testkit.BootedDir(t)
	e, st, err := Open(dir, Config{Inline: true, Secrets: boundary.NewSecrets([]byte(key))})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e, st, dir
}

// TestStepRedactsSecrets: a step whose events hold a secret (a warning,
// the model's reply and the arguments of its tool call) is journaled and
// committed with it redacted, so what the owner applies and the tool it
// runs next see "[redacted]"; a step without one is journaled as given.
func TestStepRedactsSecrets(t *testing.T) {
	const key = "sk-step-key/8e2f"
	e, _, dir := secretEngine(t, key)
	at := state.Now()
	reply := chat.Message{Role: chat.RoleAssistant, Content: "the key is " + key, ToolCalls: []chat.ToolCall{{
		ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "singularity_file_write", Arguments: `{"path":"k.txt","content":"` + strings.ReplaceAll(key, "/", `\/`) + `"}`},
	}}}
	out := e.Step(1, []state.Event{state.Warning(at, 1, "echoed "+key), state.ModelCompleted(at, 1, chat.Usage{}, reply), state.Warning(at, 1, "plain")}, at, 1)
	require.Len(t, out, 1)
	c, ok := out[0].(Committed)
	require.True(t, ok, "%#v", out[0])
	require.Len(t, c.Events, 3)
	assert.Equal(t, "echoed [redacted]", c.Events[0].Message)
	assert.Equal(t, "the key is [redacted]", c.Events[1].Chat.Content)
	assert.JSONEq(t, `{"path":"k.txt","content":"[redacted]"}`, c.Events[1].Chat.ToolCalls[0].Function.Arguments)
	assert.Equal(t, "plain", c.Events[2].Message)
	assert.Equal(t, []uint64{1, 2, 3}, []uint64{c.Events[0].Seq, c.Events[1].Seq, c.Events[2].Seq})
	journaled, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	require.Len(t, journaled, 3)
	assert.Equal(t, c.Events[0].Message, journaled[0].Message)
	assert.Equal(t, c.Events[1].Chat, journaled[1].Chat)
	data, err := os.ReadFile(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "sk-step-key")
}

// TestStepKeepsValuesASecretIsPartOf: a secret that is part of an amount
// leaves the amount whole (the event must stay readable); the event's
// free texts are still redacted.
func TestStepKeepsValuesASecretIsPartOf(t *testing.T) {
	const key = "12345678"
	e, _, dir := secretEngine(t, key)
	at := state.Now()
	credited := state.RevenueCredited(at, 1, testkit.USD("0.12345678"), "tool "+key)
	out := e.Step(1, []state.Event{credited, state.Warning(at, 1, "echoed "+key)}, at, 1)
	require.Len(t, out, 1)
	c, ok := out[0].(Committed)
	require.True(t, ok, "%#v", out[0])
	assert.Equal(t, "0.12345678", c.Events[0].Amount.String())
	assert.Equal(t, "tool [redacted]", c.Events[0].Source)
	assert.Equal(t, "echoed [redacted]", c.Events[1].Message)
	journaled, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	require.Len(t, journaled, 2)
	assert.Equal(t, "0.12345678", journaled[0].Amount.String())
}

// TestCheckpointRedactsSecrets: a checkpoint whose snapshot holds a
// secret in its mind has it redacted from state.json; when the secret is
// also part of an amount, the amount stays whole and state.json loads.
func TestCheckpointRedactsSecrets(t *testing.T) {
	const key = "12345678"
	e, st, dir := secretEngine(t, key)
	for _, amount := range []string{"10", "0.12345678"} {
		snapshot := *st
		snapshot.Budget.Starting, snapshot.Budget.Remaining = testkit.USD(amount), testkit.USD(amount)
		snapshot.Mind.SystemPrompt = "the key is " + key
		snapshot.Mind.Learnings = []string{"keep " + key}
		for _, ev := range e.Checkpoint(1, snapshot, nil, nil, false) {
			switch ev.(type) {
			case Checkpointed, Landed:
			default:
				t.Fatalf("the checkpoint answered %#v", ev)
			}
		}
		saved, err := state.Load(dir)
		require.NoError(t, err, amount)
		assert.Equal(t, "the key is [redacted]", saved.Mind.SystemPrompt, amount)
		assert.Equal(t, []string{"keep [redacted]"}, saved.Mind.Learnings, amount)
		assert.Equal(t, amount, saved.Budget.Remaining.String())
	}
}
