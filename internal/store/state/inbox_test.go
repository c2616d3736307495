package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

func usd(t *testing.T, s string) money.Amount {
	t.Helper()
	v, err := money.Parse(s)
	require.NoError(t, err)
	return v
}

func TestFundedAppliesOncePerKeyAndUnendsExhausted(t *testing.T) {
	b := &Being{Status: StatusExhausted, StatusReason: "balance 0.001 USD cannot pay"}
	b.Budget = Budget{Starting: usd(t, "1"), Remaining: usd(t, "0.001"), APISpent: usd(t, "0.999")}
	at := Time{time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}

	b.Apply(Funded(at, 3, usd(t, "2.5"), "k1", "top-up"))
	b.Apply(Funded(at, 3, usd(t, "2.5"), "k1", "top-up"))

	assert.Equal(t, "2.501", b.Budget.Remaining.String())
	assert.Equal(t, "2.5", b.Budget.Funded.String())
	assert.Equal(t, StatusStopped, b.Status)
	assert.Empty(t, b.StatusReason)
	require.NotNil(t, b.FundOf("k1"))
	assert.Equal(t, "2.501", b.FundOf("k1").Remaining.String())
	assert.Nil(t, b.FundOf("k2"))
	assert.True(t, b.Budget.Remaining.Equal(b.Budget.Expected()))
}

func TestFundedLeavesFailedEnded(t *testing.T) {
	b := &Being{Status: StatusFailed, StatusReason: "gateway: 401"}
	b.Apply(Funded(Time{}, 1, usd(t, "1"), "k", ""))
	assert.Equal(t, StatusFailed, b.Status)
	assert.Equal(t, "gateway: 401", b.StatusReason)
}

func TestInboxTakesEachMessageOnceAndFramingEmptiesIt(t *testing.T) {
	b := &Being{}
	op := InMessage{ID: "m1", From: "operator", Text: "hello"}
	kid := InMessage{ID: "m2", From: "c-1", Name: "kid", Relation: "child", Text: "hi"}
	b.Apply(MessageReceived(Time{}, 1, op))
	b.Apply(MessageReceived(Time{}, 1, op))
	b.Apply(MessageReceived(Time{}, 1, kid))
	assert.Equal(t, []InMessage{op, kid}, b.Inbox)

	started := CycleStarted(Time{}, 2)
	started.Delivered = []string{"m1"}
	b.Apply(started)
	assert.Equal(t, []InMessage{op, kid}, b.Inbox, "carried, not yet answered")
	assert.Equal(t, 1, b.Unread())
	b.Apply(ModelCompleted(Time{}, 2, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, Content: "ok"}))
	assert.Equal(t, []InMessage{kid}, b.Inbox)
	assert.Empty(t, b.Framed)
	// A message received again after its framing is still dropped.
	b.Apply(MessageReceived(Time{}, 2, op))
	assert.Equal(t, []InMessage{kid}, b.Inbox)
	assert.Equal(t, []string{"m1", "m2"}, b.Received)
}

func TestOutboxAndSleep(t *testing.T) {
	b := &Being{}
	until := Time{time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)}
	b.Apply(MessageSent(Time{}, 1, OutMessage{ID: "m1", To: "c-1", Text: "x"}))
	b.Apply(MessageSent(Time{}, 1, OutMessage{ID: "m2", To: "c-2", Text: "y"}))
	b.Apply(MessageDelivered(Time{}, 1, "m1"))
	assert.Equal(t, []OutMessage{{ID: "m2", To: "c-2", Text: "y"}}, b.Outbox)

	b.Apply(Slept(Time{}, 1, until, true))
	require.NotNil(t, b.Sleep)
	assert.Equal(t, Sleep{Until: until, WakeOnMessage: true}, *b.Sleep)
	b.Apply(CycleStarted(Time{}, 2))
	assert.Nil(t, b.Sleep)
}

func TestNewEventsRoundTrip(t *testing.T) {
	at := Time{time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)}
	started := CycleStarted(at, 4)
	started.Delivered = []string{"m1", "m2"}
	for _, e := range []Event{
		Funded(at, 2, usd(t, "0.000000000001"), "key", "a note"),
		Funded(at, 2, usd(t, "5"), "key2", ""),
		MessageReceived(at, 3, InMessage{ID: "m1", From: "operator", Text: "hello"}),
		MessageReceived(at, 3, InMessage{ID: "m2", From: "p-1", Name: "mum", Relation: "parent", Text: "hi"}),
		MessageSent(at, 3, OutMessage{ID: "m3", To: "c-1", Text: "go"}),
		MessageDelivered(at, 3, "m3"),
		Slept(at, 3, at, false),
		started,
	} {
		data, err := json.Marshal(e)
		require.NoError(t, err)
		var back Event
		require.NoError(t, json.Unmarshal(data, &back), string(data))
		again, err := json.Marshal(back)
		require.NoError(t, err)
		assert.JSONEq(t, string(data), string(again))
		assert.Equal(t, e.Type, back.Type)
	}
	data, err := json.Marshal(Funded(at, 2, usd(t, "5"), "k", ""))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"funded","at":"2026-12-07T01:02:03.000000Z","cycle":2,"amount":"5","key":"k"}`, string(data))
}

// TestFramingReplacedUnansweredCarriesItsMessagesAgain: a framing that
// carried a message and was never answered (the process was killed, or
// the first completion failed) leaves the message in the inbox; the
// replacing framing takes the framing's place in the conversation and
// the message with it, and only its answer empties the inbox.
func TestFramingReplacedUnansweredCarriesItsMessagesAgain(t *testing.T) {
	b := &Being{}
	op := InMessage{ID: "m1", From: "operator", Text: "hello"}
	b.Apply(MessageReceived(Time{}, 1, op))
	frame := func(cycle uint64, text string) Event {
		e := CycleStarted(Time{}, cycle, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + text})
		e.Delivered = []string{"m1"}
		return e
	}
	b.Apply(frame(1, "1 ... Message from the operator: hello"))
	b.Apply(frame(2, "2 ... Message from the operator: hello"))
	assert.Equal(t, []InMessage{op}, b.Inbox, "the unanswered framing took it nowhere")
	b.Apply(ModelCompleted(Time{}, 2, chat.Usage{TotalTokens: 9})) // a billed rejection answers nothing
	assert.Equal(t, []InMessage{op}, b.Inbox)
	require.Len(t, b.Conversation, 1, "the unanswered framing was replaced")
	b.Apply(ModelCompleted(Time{}, 2, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, Content: "ok"}))
	assert.Empty(t, b.Inbox)
	assert.Zero(t, b.Unread())
	b.Apply(CycleStarted(Time{}, 3, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + "3"}))
	assert.Empty(t, b.Inbox)
	assert.Len(t, b.Conversation, 3)
}
