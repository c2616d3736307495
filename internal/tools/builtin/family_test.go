package builtin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
)

func TestFamilyDefinitions(t *testing.T) {
	tools := FamilyDefinitions()
	require.Len(t, tools, 2)
	require.Equal(t, MessageSend, tools[0].Function.Name)
	require.Equal(t, SelfSleep, tools[1].Function.Name)
	for _, tool := range tools {
		require.True(t, json.Valid(tool.Function.Parameters), tool.Function.Name)
	}
	require.Contains(t, string(tools[1].Function.Parameters), `"seconds":{"type":"integer","minimum":1,"maximum":2592000}`)
	for _, tool := range Definitions() {
		require.NotEqual(t, MessageSend, tool.Function.Name, "the nine built-ins stay nine")
	}
}

func TestResolveRecipient(t *testing.T) {
	children := []state.Child{
		{ID: "c1", Name: "Bo"},
		{ID: "c2", Name: "Cy"},
		{ID: "c3", Name: "Cy"},
	}
	child := Family{ParentID: "p1", ParentName: "Ada"}
	tests := []struct {
		name     string
		to       string
		children []state.Child
		fam      Family
		want     Recipient
		refusal  string
	}{
		{"the parent", "parent", nil, child, Recipient{ID: "p1", Name: "Ada", Parent: true}, ""},
		{"a child by name", "Bo", children, Family{}, Recipient{ID: "c1", Name: "Bo"}, ""},
		{"a child by id", "c3", children, Family{}, Recipient{ID: "c3", Name: "Cy"}, ""},
		{"the root has no parent", "parent", children, Family{}, Recipient{}, "this being is the root: it has no parent"},
		{"a name two children share", "Cy", children, Family{}, Recipient{}, "two children are named Cy: give the child's id"},
		{"a stranger", "Zed", children, child, Recipient{}, `to must be "parent" or the name or id of one of this being's own children`},
		{"a name is matched exactly", "bo", children, child, Recipient{}, `to must be "parent" or the name or id of one of this being's own children`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := ResolveRecipient(tt.to, tt.children, tt.fam)
			if tt.refusal == "" {
				require.Nil(t, bad)
				require.Equal(t, tt.want, got)
				return
			}
			require.NotNil(t, bad)
			requireOutcome(t, *bad, outcome.Failed, CodeUnknownRecipient, `{"message":`+quote(tt.refusal)+`}`)
		})
	}
	require.Equal(t, RelationChild, Recipient{Parent: true}.Relation(), "a message to a parent comes from its child")
	require.Equal(t, RelationParent, Recipient{}.Relation())
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSleepArgs(t *testing.T) {
	tests := []struct {
		args    string
		seconds int64
		wake    bool
		refusal string
	}{
		{`{"seconds":60}`, 60, true, ""},
		{`{"seconds":1,"wake_on_message":false}`, 1, false, ""},
		{`{"seconds":2592000,"wake_on_message":true}`, 2592000, true, ""},
		{`{"seconds":0}`, 0, false, "seconds must be a whole number from 1 to 2592000"},
		{`{"seconds":-5}`, 0, false, "seconds must be a whole number from 1 to 2592000"},
		{`{"seconds":2592001}`, 0, false, "seconds must be a whole number from 1 to 2592000"},
		{`{"seconds":1.5}`, 0, false, "seconds must be a whole number from 1 to 2592000"},
		{`{"seconds":1e3}`, 0, false, "seconds must be a whole number from 1 to 2592000"},
		{`{"seconds":"60"}`, 0, false, "seconds is invalid"},
		{`{}`, 0, false, "seconds is invalid"},
		{`{"seconds":60,"wake_on_message":"yes"}`, 0, false, "wake_on_message is invalid"},
		{`{"seconds":60,"wake_on_message":null}`, 0, false, "wake_on_message is invalid"},
		{`{"seconds":60,"snooze":true}`, 0, false, "snooze is invalid"},
		{`[60]`, 0, false, "arguments must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			seconds, wake, bad := SleepArgs(json.RawMessage(tt.args))
			if tt.refusal != "" {
				require.NotNil(t, bad)
				requireOutcome(t, *bad, outcome.Failed, CodeInvalidArguments, `{"message":`+quote(tt.refusal)+`}`)
				return
			}
			require.Nil(t, bad)
			require.Equal(t, tt.seconds, seconds)
			require.Equal(t, tt.wake, wake)
		})
	}
}

func TestSelfSleepRecordsUntil(t *testing.T) {
	tools := testTools(t, Env{Now: func() time.Time { return epoch }})
	res := tools.Call(Request{Name: SelfSleep, Args: json.RawMessage(`{"seconds":90,"wake_on_message":false}`)})
	requireOutcome(t, res.Outcome, outcome.Success, "", `{"sleeping_until":"2026-08-24T22:06:43Z","wake_on_message":false}`)
	require.Len(t, res.Changes, 1)
	slept := res.Changes[0]
	require.Equal(t, state.EventSlept, slept.Type)
	require.Equal(t, "2026-08-24T22:06:43Z", slept.Until.Format(time.RFC3339))
	require.False(t, slept.WakeOnMessage)
}

func TestMessageSend(t *testing.T) {
	tools := testTools(t, Env{})
	mind := &state.Mind{Children: []state.Child{{ID: "c1", Name: "Bo"}}}
	res := tools.Call(Request{Name: MessageSend, Args: args("to", "Bo", "text", "line one\nline two"), Mind: mind})
	send, ok := res.Effect.(Send)
	require.True(t, ok, "the being carries out the send")
	require.Equal(t, Send{ID: "id-1", To: Recipient{ID: "c1", Name: "Bo"}, Text: "line one\nline two"}, send)

	sent := send.Sent()
	requireOutcome(t, sent.Outcome, outcome.Success, "", `{"status":"success","message_id":"id-1"}`)
	require.Equal(t, []state.Event{state.MessageSent(state.Time{}, 0, state.OutMessage{ID: "id-1", To: "c1", Text: "line one\nline two"})}, sent.Changes)
	ended := send.Ended()
	requireOutcome(t, ended.Outcome, outcome.Failed, CodeRecipientEnded, `{"message":"Bo has ended and takes no more messages"}`)
	require.Empty(t, ended.Changes, "nothing stays in the outbox")

	for _, bad := range []json.RawMessage{
		args("to", "Bo", "text", "  "),
		args("to", "Bo", "text", strings.Repeat("x", MaxMessageBytes+1)),
		args("to", "Bo"),
		args("to", "Bo", "text", "hi", "cc", "Cy"),
	} {
		res := tools.Call(Request{Name: MessageSend, Args: bad, Mind: mind})
		require.Nil(t, res.Effect, string(bad))
		require.Equal(t, CodeInvalidArguments, res.Outcome.ErrorCode, string(bad))
	}
	res = tools.Call(Request{Name: MessageSend, Args: args("to", "parent", "text", "hi"), Mind: mind})
	require.Equal(t, CodeUnknownRecipient, res.Outcome.ErrorCode, "the root has no parent")
}
