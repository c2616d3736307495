package being

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// orphanContext is the actor context of a being without a parent, for
// driving the shutdown steps directly: only Parent is ever asked.
type orphanContext struct{ actor.Context }

func (orphanContext) Parent() *actor.PID { return nil }

// loadedBeing returns a being whose state directory is booted and
// loaded, as after handleStarted, without Las or children.
func loadedBeing(t *testing.T) *Being {
	t.Helper()
	id := testkit.Identity()
	opts := Options{
		StateDir: filepath.Join(t.TempDir(), "state"), Identity: id, Mode: Run,
		ContextMessages: 200, MaxToolRounds: 8, Logger: slog.New(slog.DiscardHandler),
	}
	fresh := func() (*state.Being, error) { return NewState(id, money.MustParse("1"), "m", opts.now()), nil }
	_, _, _, err := state.Boot(opts.StateDir, false, id, fresh)
	require.NoError(t, err)
	b := New(opts)
	require.NoError(t, b.load())
	t.Cleanup(b.handleStopping)
	b.st.Status = state.StatusRunning
	return b
}

func call(id, name string) chat.ToolCall {
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: "{}"}}
}

// resultsFor counts the tool messages answering each call id.
func resultsFor(conv []chat.Message) map[string]int {
	out := map[string]int{}
	for _, m := range conv {
		if m.Role == chat.RoleTool {
			out[m.ToolCallID]++
		}
	}
	return out
}

// TestStopNowWhileCrediting: a second Ctrl-C that arrives while the being
// waits for the ledger to credit a finished finance call must neither
// answer that call twice nor drop the credit's continuation; the calls
// not yet run are closed as not_run and the being stops.
func TestStopNowWhileCrediting(t *testing.T) {
	b := loadedBeing(t)
	ctx := orphanContext{}
	calls := []chat.ToolCall{call("sell", "finance__finance_sell_report"), call("echo", "echo__echo")}
	b.cycle = &cycleRun{round: 1, calls: calls}
	b.phase = phaseCycling
	b.appendMessages(chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})
	// finishTool of the first call: its message is appended, then the
	// ledger is asked for the credit.
	b.cycle.next = 1
	b.appendMessages(chat.Message{Role: chat.RoleTool, ToolCallID: "sell", Name: calls[0].Function.Name,
		Content: outcome.Succeeded([]byte(`{"revenue_usd":"0.05"}`)).Envelope()})
	b.cycle.waiting = waitLedger

	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, phaseAbandoning, b.phase)
	assert.Equal(t, map[string]int{"sell": 1}, resultsFor(b.st.Conversation), "the finished call keeps its one result")

	// The ledger's answer lands; the round goes on to its next step.
	b.cycle.waiting = waitNothing
	b.saveAndContinue(ctx)

	assert.Equal(t, phaseStopped, b.phase, "the being finished its shutdown")
	assert.Equal(t, map[string]int{"sell": 1, "echo": 1}, resultsFor(b.st.Conversation))
	last := b.st.Conversation[len(b.st.Conversation)-1]
	assert.Equal(t, outcome.Failure("not_run", "the being shut down before this call ran").Envelope(), last.Content)
	saved, err := state.Load(b.opts.StateDir)
	require.NoError(t, err)
	assert.Equal(t, state.StatusStopped, saved.Status)
	assert.Equal(t, b.st.Conversation, saved.Conversation)
}

// TestStopNowWhileDebiting: a second Ctrl-C while the being waits for
// the ledger's debit of a finished completion must not answer the
// previous round's call again, and the debit still becomes durable.
func TestStopNowWhileDebiting(t *testing.T) {
	b := loadedBeing(t)
	ctx := orphanContext{}
	prev := []chat.ToolCall{call("r1", "singularity_memory_recall")}
	b.cycle = &cycleRun{round: 2, calls: prev, next: 1, waiting: waitLedger}
	b.phase = phaseCycling
	b.appendMessages(
		chat.Message{Role: chat.RoleAssistant, ToolCalls: prev},
		chat.Message{Role: chat.RoleTool, ToolCallID: "r1", Name: prev[0].Function.Name, Content: "{}"},
	)

	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, map[string]int{"r1": 1}, resultsFor(b.st.Conversation))
	require.Equal(t, phaseAbandoning, b.phase, "the debit in flight is not abandoned")

	// The ledger's answer lands as handleCompletion's continuation
	// handles it: the cost is made durable, then the round's calls are
	// closed without running.
	next := []chat.ToolCall{call("r2", "singularity_memory_recall")}
	b.cycle.waiting = waitNothing
	budget := b.st.Budget
	budget.Remaining = budget.Remaining.Sub(money.MustParse("0.01"))
	budget.APISpent = money.MustParse("0.01")
	require.NoError(t, b.recordDebit(
		messages.CompletionResponse{Message: chat.Message{ToolCalls: next}, Usage: chat.Usage{PromptTokens: 1, TotalTokens: 1}},
		messages.DebitResponse{Amount: money.MustParse("0.01"), API: money.MustParse("0.01"), Budget: messages.Budget(budget)}))
	b.cycle.calls, b.cycle.next = next, 0
	b.nextTool(ctx)

	assert.Equal(t, phaseStopped, b.phase)
	assert.Equal(t, map[string]int{"r1": 1, "r2": 1}, resultsFor(b.st.Conversation))
	saved, err := state.Load(b.opts.StateDir)
	require.NoError(t, err)
	assert.Equal(t, "0.99", saved.Budget.Remaining.String())
	events := beingJournal(t, b)
	require.NoError(t, state.CheckInvariant(saved.Budget, events))
	assert.Equal(t, []string{"started", "model_completed", "cost_debited", "stopped"}, testkit.Types(events))
}
