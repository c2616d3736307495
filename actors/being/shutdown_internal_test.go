package being

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
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
