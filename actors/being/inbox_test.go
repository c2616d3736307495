package being_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
)

// TestInboxInTheFramingOnce: the messages a being received before its
// cycle are in that cycle's framing, the operator's and a relative's,
// each once, with a secret the runtime holds redacted; cycle_started
// lists their ids and the next cycle's framing carries none of them.
func TestInboxInTheFramingOnce(t *testing.T) {
	t.Parallel()
	const secret = "inbox-secret-51c2"
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("noted", bramatest.Usage(10, 2))
	})
	opts := options(t, being.Run)
	opts.MaxCycles = 2
	opts.Secrets = boundary.NewSecrets([]byte(secret))
	st := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	for _, m := range []state.InMessage{
		{ID: "m1", From: "operator", Text: "the key is " + secret},
		{ID: "m2", From: "b-1", Name: "Ada", Relation: "parent", Text: "well done"},
	} {
		st.Apply(state.MessageReceived(state.Now(), 0, m))
	}
	h := startWith(t, srv, opts, st)
	h.reportFor(2)
	h.shutdown()

	reqs := srv.Completions()
	require.Len(t, reqs, 2)
	first := reqs[0].Completion.Messages[1].Content
	assert.True(t, strings.HasSuffix(first, "\n\nMessage from the operator: the key is [redacted]\n\nMessage from Ada (parent): well done"), first)
	for _, r := range reqs {
		assert.NotContains(t, string(r.Body), secret)
	}
	second := lastMessage(&reqs[1]).Content
	assert.NotContains(t, second, "Message from")
	var delivered [][]string
	for _, e := range h.journal() {
		if e.Type == state.EventCycleStarted {
			delivered = append(delivered, e.Delivered)
		}
	}
	assert.Equal(t, [][]string{{"m1", "m2"}, nil}, delivered)
	assert.Empty(t, h.state().Inbox)
}

// TestFramedMessageSurvivesItsUnansweredFraming: a kill between the
// cycle_started that carried a message and the model's answer leaves a
// framing the next cycle replaces (docs/family.md#messages). The
// replacing framing carries the message again, so the model sees it
// exactly once, and only the answered framing takes it out of the inbox.
func TestFramedMessageSurvivesItsUnansweredFraming(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("noted", bramatest.Usage(10, 2))
	})
	opts := options(t, being.Run)
	opts.MaxCycles = 3
	st := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	said := state.InMessage{ID: "m1", From: "operator", Text: "the harbour opens at dawn"}
	st.Apply(state.MessageReceived(state.Now(), 0, said))
	// Cycle 1's framing carried m1 and was journaled; the process died
	// before the model answered it.
	framing := prompt.WithMessages(prompt.Framing(1, st.Budget.Remaining, st.Budget.Earned, st.Budget.NetProfit(), opts.Model, nil), []state.InMessage{said})
	started := state.CycleStarted(state.Now(), 1, chat.Message{Role: chat.RoleUser, Content: framing})
	started.Delivered = []string{said.ID}
	st.Apply(started)

	h := startWith(t, srv, opts, st)
	h.reportFor(3)
	h.shutdown()

	reqs := srv.Completions()
	require.NotEmpty(t, reqs)
	const carried = "Message from the operator: the harbour opens at dawn"
	assert.Equal(t, 1, strings.Count(string(reqs[0].Body), carried), "the replacing framing carries the message, once")
	assert.Contains(t, lastMessage(&reqs[0]).Content, carried)
	for _, r := range reqs[1:] {
		assert.Equal(t, 1, strings.Count(string(r.Body), carried), "after its answer the message sits in the conversation once")
	}
	var delivered [][]string
	for _, e := range h.journal() {
		if e.Type == state.EventCycleStarted {
			delivered = append(delivered, e.Delivered)
		}
	}
	assert.Equal(t, [][]string{{"m1"}, nil}, delivered, "cycle 2 carries m1 again, cycle 3 nothing")
	assert.Empty(t, h.state().Inbox)
}
