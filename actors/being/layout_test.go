package being_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// rememberEachCycle answers a cycle's first round with a call to
// remember something of that cycle and its second with a reply.
func rememberEachCycle() func(*bramatest.Request) bramatest.Reply {
	var n atomic.Int64
	return func(r *bramatest.Request) bramatest.Reply {
		msgs := r.Completion.Messages
		if last := msgs[len(msgs)-1]; last.Role == chat.RoleTool {
			return bramatest.TextReply("noted", bramatest.Usage(100, 5))
		}
		i := n.Add(1)
		return bramatest.ToolCallsReply(bramatest.Usage(100, 10),
			bramatest.Call(fmt.Sprintf("call-%d", i), "singularity_memory_remember", fmt.Sprintf(`{"kind":"note","text":"seen in cycle %d"}`, i)))
	}
}

// rawMessages is a request body's messages, byte for byte.
func rawMessages(t *testing.T, r bramatest.Request) []json.RawMessage {
	t.Helper()
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body))
	return body.Messages
}

// cycleOf is the cycle a request belongs to: the number in its newest
// framing message.
func cycleOf(r bramatest.Request) string {
	msgs := r.Completion.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if state.IsFraming(msgs[i]) {
			rest := strings.TrimPrefix(msgs[i].Content, framing.Prefix)
			return rest[:strings.IndexByte(rest, '.')]
		}
	}
	return ""
}

// TestStableLayout lives fourteen cycles with the stable layout and a
// window of 20 messages (a cycle is four: framing, call, result, reply),
// remembering something every cycle: every request of a cycle is the one
// before it plus the messages appended, byte for byte; the window is cut
// in epochs, back to at most half of it, so it starts anew only a few
// times, and the system message changes only with it; each memory is in
// its tool's result and in the next cycle's framing.
func TestStableLayout(t *testing.T) {
	const cycles, window = 14, 20
	srv := newBrama(t)
	srv.SetHandler(rememberEachCycle())
	opts := options(t, being.Run)
	opts.PromptLayout = prompt.LayoutStable
	opts.ContextMessages = window
	h := start(t, srv, opts)
	h.reportFor(cycles)
	h.shutdown()

	reqs := srv.Completions()
	require.GreaterOrEqual(t, len(reqs), 2*cycles)
	starts, systems := map[string]bool{}, map[string]bool{}
	for i, r := range reqs {
		msgs := r.Completion.Messages
		system := msgs[0]
		assert.Equal(t, chat.RoleSystem, system.Role)
		systems[system.Content] = true
		if len(msgs) > window+4 {
			t.Errorf("request %d carries %d messages, past the window of %d and one cycle", i, len(msgs), window)
		}
		starts[msgs[1].Content] = true
		if i == 0 || cycleOf(reqs[i-1]) != cycleOf(r) {
			continue
		}
		prev, cur := rawMessages(t, reqs[i-1]), rawMessages(t, r)
		require.Greater(t, len(cur), len(prev))
		for k := range prev {
			require.JSONEq(t, string(prev[k]), string(cur[k]))
			require.Equal(t, string(prev[k]), string(cur[k]), "request %d (cycle %s) is the one before plus appended messages: message %d differs", i, cycleOf(r), k)
		}
	}
	// 14 cycles of 4 messages in a window of 20 cut back to 10: a new
	// start about every third cycle, not every cycle as the seed's.
	assert.LessOrEqual(t, len(starts), cycles/2, "window starts: %d", len(starts))
	assert.Greater(t, len(starts), 1, "the window was cut")
	assert.LessOrEqual(t, len(systems), len(starts), "the system message changes only when the window starts anew")
	assert.Greater(t, len(systems), 1, "a new epoch's system message holds the memories made before it")

	// A memory of cycle c is in its tool result and in cycle c+1's framing.
	events := h.journal()
	var framings []string
	for _, e := range events {
		if e.Type == state.EventCycleStarted {
			framings = append(framings, e.Messages[0].Content)
		}
	}
	require.GreaterOrEqual(t, len(framings), cycles)
	assert.NotContains(t, framings[0], "memories")
	for c := 2; c <= cycles; c++ {
		assert.True(t, strings.HasSuffix(framings[c-1], "\n\nNew persistent memories:\n- note: seen in cycle "+fmt.Sprint(c-1)), "cycle %d's framing: %q", c, framings[c-1])
	}
	for _, e := range events {
		if e.Type == state.EventToolFinished {
			assert.Contains(t, e.Chat.Content, `"memory_id":`, "the memory is in its tool's result")
		}
	}
	st := h.state()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.LessOrEqual(t, len(st.Conversation)+len(st.Encoded), window, "the checkpoint keeps the epoch window")
}
