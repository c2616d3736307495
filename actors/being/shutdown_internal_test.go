package being

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// stepContext is the actor context of a being driven one handler at a
// time: it has no parent and records what the being sends and stops.
type stepContext struct {
	actor.Context
	sent    []any
	stopped []*actor.PID
}

func (*stepContext) Parent() *actor.PID              { return nil }
func (*stepContext) Self() *actor.PID                { return actor.NewPID("test", "being") }
func (*stepContext) ActorSystem() *actor.ActorSystem { return nil }
func (c *stepContext) Send(_ *actor.PID, msg any)    { c.sent = append(c.sent, msg) }
func (c *stepContext) Stop(pid *actor.PID)           { c.stopped = append(c.stopped, pid) }

// loadedBeing returns a being whose state directory holds a fresh being,
// loaded and booted as after its boot step, without Las or children.
// Its durable writes run inline, so each handler's effect is complete
// when it returns.
func loadedBeing(t *testing.T, configure ...func(*Options)) *Being {
	t.Helper()
	id := testkit.Identity()
	opts := Options{
		StateDir: filepath.Join(t.TempDir(), "state"), Identity: id, Mode: Run,
		ContextMessages: 200, MaxToolRounds: 8, Logger: slog.New(slog.DiscardHandler),
	}
	for _, c := range configure {
		c(&opts)
	}
	fresh := func() (*state.Being, error) { return NewState(id, testkit.USD("1"), "m", opts.now()), nil }
	_, _, _, err := state.Boot(opts.StateDir, false, id, fresh)
	require.NoError(t, err)
	b := New(opts)
	b.opts.inline = true
	require.NoError(t, b.load(nil))
	t.Cleanup(b.handleStopping)
	b.st.Status = state.StatusRunning
	b.booted = true
	return b
}

func call(id, name string) chat.ToolCall {
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: "{}"}}
}

// say adds messages to the being's conversation as if earlier steps had
// applied them.
func say(b *Being, msgs ...chat.Message) { b.st.Conversation = append(b.st.Conversation, msgs...) }

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
// waits for the ledger to price the credit of a finished finance call
// must neither answer that call twice nor drop the credit; the calls not
// yet run are closed as not_run and the being stops.
func TestStopNowWhileCrediting(t *testing.T) {
	b := loadedBeing(t)
	ctx := &stepContext{}
	calls := []chat.ToolCall{call("sell", "finance__finance_sell_report"), call("echo", "echo__echo")}
	b.cycle = &cycleRun{round: 1, calls: calls, next: 1, waiting: waitLedger}
	b.phase = phaseCycling
	say(b, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})

	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, phaseAbandoning, b.phase)
	assert.Empty(t, resultsFor(b.st.Conversation), "nothing is answered before the ledger did")

	// The ledger's answer lands: the call's step (result and credit) is
	// written, then the round goes on to its next step, which abandons.
	b.cycle.waiting = waitNothing
	credit := messages.CreditResponse{Credited: true, Amount: testkit.USD("0.05"), Source: calls[0].Function.Name}
	finished := state.ToolFinished(b.opts.now(), b.st.Cycle, calls[0].Function.Name, outcome.Success)
	finished.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: "sell", Name: calls[0].Function.Name,
		Content: outcome.Succeeded([]byte(`{"revenue_usd":"0.05"}`)).Envelope()}
	b.commitTool(ctx, finished, &credit, toolResult{})

	assert.Equal(t, phaseStopped, b.phase, "the being finished its shutdown")
	assert.Equal(t, []any{messages.RevenueCredited{Amount: credit.Amount}}, ctx.sent, "the ledger hears of the durable credit")
	assert.Equal(t, map[string]int{"sell": 1, "echo": 1}, resultsFor(b.st.Conversation))
	last := b.st.Conversation[len(b.st.Conversation)-1]
	assert.Equal(t, outcome.Failure("not_run", "the being shut down before this call ran").Envelope(), last.Content)
	saved, err := state.Load(b.opts.StateDir)
	require.NoError(t, err)
	assert.Equal(t, state.StatusStopped, saved.Status)
	assert.Equal(t, b.st.Conversation, saved.Conversation)
	assert.Equal(t, "1.05", saved.Budget.Remaining.String())
	require.NoError(t, testkit.CheckInvariant(saved.Budget, beingJournal(t, b)))
}

// TestStopNowWhileDebiting: a second Ctrl-C while the being waits for
// the ledger to price a finished completion must not answer the previous
// round's call again, and the debit still becomes durable.
func TestStopNowWhileDebiting(t *testing.T) {
	b := loadedBeing(t)
	ctx := &stepContext{}
	prev := []chat.ToolCall{call("r1", "singularity_memory_recall")}
	b.cycle = &cycleRun{round: 2, calls: prev, next: 1, waiting: waitLedger, reservation: ledger.Reservation{Bound: testkit.USD("0.01")}}
	b.phase = phaseCycling
	say(b,
		chat.Message{Role: chat.RoleAssistant, ToolCalls: prev},
		chat.Message{Role: chat.RoleTool, ToolCallID: "r1", Name: prev[0].Function.Name, Content: "{}"},
	)

	b.handleStop(ctx, messages.StopBeing{Now: true})
	assert.Equal(t, map[string]int{"r1": 1}, resultsFor(b.st.Conversation))
	require.Equal(t, phaseAbandoning, b.phase, "the debit in flight is not abandoned")

	// The ledger's price lands as handleCompletion's continuation
	// handles it: the cost is made durable, then the round's calls are
	// closed without running.
	next := []chat.ToolCall{call("r2", "singularity_memory_recall")}
	b.cycle.waiting = waitNothing
	b.commitCompletion(ctx,
		messages.CompletionResponse{Message: chat.Message{ToolCalls: next}, Usage: chat.Usage{PromptTokens: 1, TotalTokens: 1}},
		messages.DebitResponse{Amount: testkit.USD("0.01"), API: testkit.USD("0.01"), Tokens: 1})

	assert.Equal(t, phaseStopped, b.phase)
	assert.Equal(t, map[string]int{"r1": 1, "r2": 1}, resultsFor(b.st.Conversation))
	saved, err := state.Load(b.opts.StateDir)
	require.NoError(t, err)
	assert.Equal(t, "0.99", saved.Budget.Remaining.String())
	events := beingJournal(t, b)
	require.NoError(t, testkit.CheckInvariant(saved.Budget, events))
	assert.Equal(t, []string{"model_completed", "cost_debited", "tool_finished", "stopped"}, testkit.Types(events))
}
