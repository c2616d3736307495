package being_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestWindowCutInLongRun lives several cycles with a small window: what
// leaves the window is in conversation.jsonl, state keeps at most N
// messages starting at a framing message, no request ever separates a
// tool call from its result, and nothing is lost or duplicated.
func TestWindowCutInLongRun(t *testing.T) {
	t.Parallel()
	const cycles, window = 6, 6
	srv := newBrama(t)
	// Each cycle: a memory call, then a reply (4 messages).
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		last := lastMessage(r)
		if last.Role == chat.RoleTool {
			return bramatest.TextReply("rested", bramatest.Usage(10, 2))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(10, 2),
			bramatest.Call(fmt.Sprintf("call-%d", len(r.Completion.Messages)), "singularity_memory_remember",
				bramatest.Arguments(map[string]string{"kind": "note", "text": last.Content[:30]})))
	})
	opts := options(t, being.Run)
	opts.ContextMessages = window
	opts.MaxCycles = cycles
	h := start(t, srv, opts)
	h.reportFor(cycles)
	require.Equal(t, state.StatusStopped, h.shutdown().Status)

	st := h.state()
	archived := h.archive()
	require.NotEmpty(t, archived)
	whole := append(append([]chat.Message(nil), archived...), st.Conversation...)
	require.Len(t, whole, 4*cycles, "every message is either archived or kept, once")
	for c := range cycles {
		part := whole[4*c : 4*c+4]
		assert.True(t, strings.HasPrefix(part[0].Content, fmt.Sprintf("Begin autonomous cycle %d.", c+1)), part[0].Content)
		assert.Equal(t, chat.RoleAssistant, part[1].Role)
		require.Len(t, part[1].ToolCalls, 1)
		assert.Equal(t, part[1].ToolCalls[0].ID, part[2].ToolCallID)
		assert.Equal(t, chat.Message{Role: chat.RoleAssistant, Content: "rested"}, part[3])
	}
	assert.LessOrEqual(t, len(st.Conversation), window)
	assert.True(t, state.IsFraming(st.Conversation[0]), "state's window starts at a framing message")
	assert.True(t, state.IsFraming(whole[len(archived)]), "the archive ends just before a framing message")

	reqs := srv.Completions()
	require.Len(t, reqs, 2*cycles)
	for i, r := range reqs {
		conv := r.Completion.Messages[1:]
		assert.LessOrEqual(t, len(conv), window, "request %d", i)
		assert.True(t, state.IsFraming(conv[0]), "request %d window starts at a framing message", i)
		assertCallsAnswered(t, conv)
	}
	info, err := os.Stat(filepath.Join(opts.StateDir, "conversation.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	require.NoError(t, testkit.CheckInvariant(st.Budget, h.journal()))
}

// assertCallsAnswered checks that every tool call in conv is answered by
// a tool message later in conv, and every tool message answers a call.
func assertCallsAnswered(t *testing.T, conv []chat.Message) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range conv {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == chat.RoleTool {
			assert.True(t, open[m.ToolCallID], "tool result %s has its call", m.ToolCallID)
			delete(open, m.ToolCallID)
		}
	}
	assert.Empty(t, open, "calls without results")
}

// TestRoundLimit: tool calls keep coming until the rounds run out.
func TestRoundLimit(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.ToolCallsReply(bramatest.Usage(5, 1), bramatest.Call("c", "singularity_memory_recall", `{"query":"x"}`))
	})
	opts := options(t, being.Once)
	opts.MaxToolRounds = 3
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	assert.Equal(t, being.ReportToolRoundLimit, r.Status)
	assert.Nil(t, r.FinalContent)
	assert.Equal(t, []string{"singularity_memory_recall", "singularity_memory_recall", "singularity_memory_recall"}, r.Actions)
	assert.Equal(t, uint64(18), r.TotalTokens)
	assert.Len(t, srv.Completions(), 3)
	h.shutdown()

	events := h.journal()
	assert.Equal(t, []string{"maximum tool rounds reached"}, warnings(events))
	assert.Equal(t, []string{
		"started", "cycle_started",
		"model_completed", "cost_debited", "tool_finished",
		"model_completed", "cost_debited", "tool_finished",
		"model_completed", "cost_debited", "tool_finished",
		"warning", "stopped",
	}, testkit.Types(events))
}

// TestToolCallRefusals: unknown names and non-object arguments are
// refused before any tool runs — in particular before Las is asked — and
// a secret-shaped result is replaced whole by the output boundary.
func TestToolCallRefusals(t *testing.T) {
	t.Parallel()
	deliveries := filepath.Join(t.TempDir(), "deliveries")
	srv := newBrama(t)
	calls := []chat.ToolCall{
		bramatest.Call("unknown", "chaos__no_such_tool", `{}`),
		bramatest.Call("array", "chaos__count", `[1,2]`),
		bramatest.Call("string", "chaos__count", `"key"`),
		bramatest.Call("null", "singularity_memory_remember", `null`),
		bramatest.Call("broken", "echo__echo", `{"message":`),
		bramatest.Call("counted", "chaos__count", `{"key":"delivered"}`),
		bramatest.Call("secret", "chaos__secret", `{}`),
		bramatest.Call("echo", "echo__echo", `{"message":"hello"}`),
	}
	srv.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(10, 5), calls...),
		bramatest.TextReply("done", bramatest.Usage(10, 5)),
	)
	opts := options(t, being.Once)
	withExampleLas(t, &opts, fmt.Sprintf(`{"deliveries_file":%q}`, deliveries))
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	require.Equal(t, being.ReportCompleted, r.Status)
	h.shutdown()

	reqs := srv.Completions()
	require.Len(t, reqs, 2)
	msgs := reqs[1].Completion.Messages
	tools := msgs[len(msgs)-len(calls):]
	invalid := `{"chat_id":null,"content":{"message":"arguments must be a JSON object"},"error_code":"invalid_arguments","message_id":null,"status":"failed"}`
	want := map[string]string{
		"unknown": `{"chat_id":null,"content":{"message":"tool is not in the current catalog"},"error_code":"unknown_tool","message_id":null,"status":"failed"}`,
		"array":   invalid,
		"string":  invalid,
		"null":    invalid,
		"broken":  invalid,
		"secret":  `{"status":"success","error_code":"sensitive_output_rejected"}`,
	}
	for i, call := range calls {
		m := tools[i]
		assert.Equal(t, chat.RoleTool, m.Role)
		assert.Equal(t, call.ID, m.ToolCallID)
		assert.Equal(t, call.Function.Name, m.Name)
		if text, ok := want[call.ID]; ok {
			assert.Equal(t, text, m.Content, call.ID)
		}
	}
	assert.Contains(t, tools[5].Content, `"status":"success"`)
	assert.Contains(t, tools[7].Content, `"status":"success"`)
	assert.Contains(t, tools[7].Content, `hello`)

	// Only the well-formed call of chaos__count reached Las.
	delivered, err := os.ReadFile(deliveries)
	require.NoError(t, err)
	assert.Equal(t, "call chaos__count delivered\n", string(delivered))

	var statuses []string
	for _, e := range h.journal() {
		if e.Type == state.EventToolFinished {
			statuses = append(statuses, e.Tool+":"+e.Status)
		}
	}
	assert.Equal(t, []string{
		"chaos__no_such_tool:failed", "chaos__count:failed", "chaos__count:failed",
		"singularity_memory_remember:failed", "echo__echo:failed", "chaos__count:success",
		"chaos__secret:success", "echo__echo:success",
	}, statuses)

	// Nothing of the secret-shaped result is anywhere.
	for _, leak := range []string{"sk-example-not-a-real-key", "/etc/example/credentials"} {
		for _, name := range []string{"state.json", "activity.jsonl", "conversation.jsonl"} {
			assert.NotContains(t, h.fileText(name), leak, name)
		}
		for _, req := range srv.Requests() {
			assert.NotContains(t, string(req.Body), leak)
		}
	}
	// The call succeeded and its output was withheld: it reads success.
	assert.Equal(t, outcome.Rejection(outcome.Success).Envelope(), tools[6].Content)
}

// TestShutdownGraceAbandonsModelCall: a stop asked while a completion
// hangs waits the grace, then abandons the call with a warning and
// still ends cleanly with status stopped.
func TestShutdownGraceAbandonsModelCall(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	arrived := make(chan struct{})
	var once sync.Once
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		once.Do(func() { close(arrived) })
		return bramatest.Reply{Stall: true}
	})
	opts := options(t, being.Run)
	opts.ShutdownGrace = 200 * time.Millisecond
	h := start(t, srv, opts)
	select {
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the completion never reached Brama")
	}
	began := time.Now()
	stopped := h.shutdown()
	assert.Equal(t, state.StatusStopped, stopped.Status)
	assert.NoError(t, stopped.Err)
	assert.GreaterOrEqual(t, time.Since(began), opts.ShutdownGrace, "the call had its grace")

	events := h.journal()
	assert.Equal(t, []string{"abandoned model call in flight: shutdown grace expired"}, warnings(events))
	assert.Equal(t, []string{"started", "cycle_started", "warning", "stopped"}, testkit.Types(events))
	st := h.state()
	assert.Equal(t, state.StatusStopped, st.Status)
	assert.Equal(t, uint64(1), st.Cycle)
	require.Len(t, st.Conversation, 1, "no assistant message for the abandoned call")
}

// TestOnceStopDuringModelCall: a stop asked (Ctrl-C) while once's model
// call is in flight lets the call finish within the grace; the cycle ends
// and the being still completes its shutdown without a second signal.
func TestOnceStopDuringModelCall(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		close(arrived)
		<-release
		return bramatest.TextReply("finished", bramatest.Usage(3, 1))
	})
	opts := options(t, being.Once)
	opts.ShutdownGrace = waitLimit // the call must be allowed to finish
	h := start(t, srv, opts)
	select {
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the completion never reached Brama")
	}
	h.system.Root.Send(h.family, messages.ShutdownFamily{})
	h.barrier() // the root being has read its StopBeing
	close(release)

	r := h.report()
	assert.Equal(t, being.ReportCompleted, r.Status)
	assert.Equal(t, "finished", *r.FinalContent)
	stopped := h.stoppedWithin(10 * time.Second)
	assert.Equal(t, state.StatusStopped, stopped.Status)
	events := h.journal()
	assert.Equal(t, []string{"started", "cycle_started", "model_completed", "cost_debited", "stopped"}, testkit.Types(events))
}

// TestShutdownGraceAbandonsLasCall: the grace expiring while a Las call
// hangs abandons it: the call is closed as indeterminate (its effect is
// unknown and it is never replayed), the calls after it as not run, and
// the conversation stays well formed.
func TestShutdownGraceAbandonsLasCall(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	calls := []chat.ToolCall{
		bramatest.Call("slow", "chaos__slow", `{"key":"s","ms":60000}`),
		bramatest.Call("echo", "echo__echo", `{"message":"hi"}`),
	}
	arrived := make(chan struct{})
	var once sync.Once
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		first := false
		once.Do(func() { first = true; close(arrived) })
		if !first {
			return bramatest.TextReply("unexpected", bramatest.Usage(1, 1))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(10, 5), calls...)
	})
	deliveries := filepath.Join(t.TempDir(), "deliveries")
	opts := options(t, being.Run)
	opts.ShutdownGrace = time.Second
	withExampleLas(t, &opts, fmt.Sprintf(`{"deliveries_file":%q}`, deliveries))
	h := start(t, srv, opts)
	// Stop while the round is under way: the model call finishes within
	// the grace, the round goes on to its tools, and the grace expires
	// while chaos__slow hangs.
	select {
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the being never called Brama")
	}
	stopped := h.shutdown()
	assert.Equal(t, state.StatusStopped, stopped.Status)

	events := h.journal()
	assert.Equal(t, []string{"abandoned las call in flight: shutdown grace expired"}, warnings(events))
	// The two calls it closed (in flight, not run) are journaled too.
	assert.Equal(t, []string{"started", "cycle_started", "model_completed", "cost_debited", "warning", "tool_finished", "tool_finished", "stopped"}, testkit.Types(events))
	st := h.state()
	require.Len(t, st.Conversation, 4)
	assertCallsAnswered(t, st.Conversation)
	assert.Equal(t, outcome.Unknown("shutdown", "the being shut down while this call was in flight").Envelope(), st.Conversation[2].Content)
	assert.Equal(t, outcome.Failure("not_run", "the being shut down before this call ran").Envelope(), st.Conversation[3].Content)
	delivered, err := os.ReadFile(deliveries)
	require.NoError(t, err)
	assert.Contains(t, string(delivered), "call chaos__slow s\n", "the call had reached Las")
	assert.Len(t, srv.Completions(), 1)
}

// TestOnceExhaustedMidCycle: a round's cost leaves the being unable to
// pay for the smallest completion, so the next round does not start: the report says budget_exhausted and
// the being ends exhausted.
func TestOnceExhaustedMidCycle(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.Enqueue(bramatest.ToolCallsReply(bramatest.Usage(10, 2000),
		bramatest.Call("m", "singularity_memory_remember", `{"kind":"k","text":"t"}`)))
	opts := options(t, being.Once)
	// The round reserves 2048 output tokens (0.002048) and costs 0.002;
	// the 0.0002 left pays for 200 tokens, below the 256 worth a call.
	opts.StartingBalance = testkit.USD("0.0022")
	opts.Pricing.OutputPerMillion = testkit.USD("1")
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	assert.Equal(t, being.ReportBudgetExhausted, r.Status)
	assert.Nil(t, r.FinalContent)
	assert.Equal(t, []string{"singularity_memory_remember"}, r.Actions)
	assert.Equal(t, "0.0002", r.Balance.String())
	assert.Equal(t, "-0.002", r.NetProfit.String())
	assert.Equal(t, state.StatusExhausted, h.shutdown().Status)

	st := h.state()
	assert.Equal(t, state.StatusExhausted, st.Status)
	assert.Equal(t, "0.0002", st.Budget.Remaining.String())
	assert.Len(t, srv.Completions(), 1)
	events := h.journal()
	assert.Equal(t, []string{"started", "cycle_started", "model_completed", "cost_debited", "tool_finished", "memory_added", "stopped"}, testkit.Types(events))
	assert.Len(t, st.Mind.Memories, 1, "the memory of the journaled step is in the mind")
	assert.Equal(t, state.StatusExhausted, events[len(events)-1].Status)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestResumeAfterCrashMidRound: a crash after a round's cost was made
// durable but before all its tools ran leaves tool calls without
// results. The next life must close them (indeterminate: their effect is
// unknown, they are never replayed) before a new framing message, or
// every later request would carry an assistant message whose tool calls
// are unanswered, which OpenAI-compatible servers refuse.
func TestResumeAfterCrashMidRound(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("resumed", bramatest.Usage(1, 1))
	})
	opts := options(t, being.Once)
	st := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	st.Cycle = 1
	st.Status = state.StatusRunning
	calls := []chat.ToolCall{
		bramatest.Call("done", "singularity_memory_recall", `{"query":"x"}`),
		bramatest.Call("lost", "echo__echo", `{"message":"x"}`),
	}
	st.Conversation = []chat.Message{
		{Role: chat.RoleUser, Content: "Begin autonomous cycle 1. Balance: 10 USD. Earned: 0 USD. Net profit: 0 USD. Current model: test-model. Recent actions: . Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."},
		{Role: chat.RoleAssistant, ToolCalls: calls},
		{Role: chat.RoleTool, ToolCallID: "done", Name: "singularity_memory_recall", Content: `{"chat_id":null,"content":{"memories":[]},"error_code":null,"message_id":null,"status":"success"}`},
	}
	h := startWith(t, srv, opts, st)
	r := h.report()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Cycle)
	h.shutdown()

	reqs := srv.Completions()
	require.Len(t, reqs, 1)
	conv := reqs[0].Completion.Messages[1:]
	assertCallsAnswered(t, conv)
	require.GreaterOrEqual(t, len(conv), 5)
	assert.Equal(t, "lost", conv[3].ToolCallID)
	assert.Equal(t, chat.RoleTool, conv[3].Role)
	assert.Contains(t, conv[3].Content, `"status":"indeterminate"`)
	assert.True(t, state.IsFraming(conv[4]))
	assertCallsAnswered(t, h.state().Conversation)
}
