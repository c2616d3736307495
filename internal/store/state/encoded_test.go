package state

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
)

// encodedLife is a short life whose messages hold what JSON escapes
// (HTML, quotes, control characters) and an unanswered
// framing that the next cycle replaces.
func encodedLife() []Event {
	at := Now()
	call := chat.ToolCall{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: `{"q":"<b> & \"x\""}`}}
	return []Event{
		CycleStarted(at, 1, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + "1. <html> & \u2028"}, chat.Message{Role: chat.RoleUser, Content: "stimulus \x01 \t"}),
		ModelCompleted(at, 1, chat.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call}}),
		func() Event {
			e := ToolFinished(at, 1, "f", "success")
			e.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: "call_1", Name: "f", Content: `{"status":"success"}`}
			return e
		}(),
		ModelCompleted(at, 1, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, Content: "done"}),
		CycleStarted(at, 2, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + "2."}),
		// Cycle 2 failed before its completion: cycle 3 replaces it.
		CycleStarted(at, 3, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + "3."}),
	}
}

func TestEncodedConversationMatchesParsed(t *testing.T) {
	fresh := func() *Being {
		return &Being{SchemaVersion: SchemaVersion, Status: StatusRunning, StartedAt: Now(),
			Budget: Budget{Starting: mustParse("1"), Remaining: mustParse("1")}}
	}
	parsed, encoded := fresh(), fresh()
	encoded.StartedAt = parsed.StartedAt
	encoded.HoldEncoded()
	for _, e := range encodedLife() {
		parsed.Apply(e)
		encoded.Apply(e)
	}
	require.Len(t, parsed.Conversation, 6)
	require.Empty(t, encoded.Conversation)
	require.Len(t, encoded.Encoded, 6)

	msgs, err := encoded.Messages()
	require.NoError(t, err)
	require.Equal(t, parsed.Conversation, msgs)

	want, err := Encode(parsed)
	require.NoError(t, err)
	got, err := Encode(encoded)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "state.json is the same bytes")

	for limit := 0; limit <= 6; limit++ {
		kept, archived := Window(parsed.Conversation, limit)
		ekept, earchived := WindowEncoded(encoded.Encoded, limit)
		require.Equal(t, EncodeMessages(kept), ekept, "limit %d", limit)
		require.Len(t, earchived, len(archived), "limit %d", limit)
		require.Equal(t, string(mustMarshal(t, archived)), string(mustMarshal(t, earchived)), "limit %d", limit)
	}
	require.Equal(t, len(mustMarshal(t, parsed.Conversation)), encoded.Encoded.Bytes())
	for i, m := range parsed.Conversation {
		require.Equal(t, IsFraming(m), IsFramingEncoded(encoded.Encoded[i]), "message %d", i)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	if enc, ok := v.(Encoded); ok {
		return enc.AppendJSON(nil)
	}
	out, err := json.Marshal(append([]chat.Message{}, v.([]chat.Message)...)) // not through the packer
	require.NoError(t, err)
	return out
}
