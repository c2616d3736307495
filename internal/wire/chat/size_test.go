package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuotedLen(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "line\nbreak\ttab\r\b\f", "\x00\x01\x1f control",
		"<html> & </html>", "naïve café — ünïcödé 日本語 🎉", "sep\u2028and\u2029", "bad \xff\xfe utf8 \xc3",
	} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, len(want), QuotedLen(s), "%q encodes as %s", s, want)
	}
}

func TestSizeBound(t *testing.T) {
	full := Message{Role: RoleAssistant, Content: "x", ToolCallID: "c", Name: "n",
		ToolCalls: []ToolCall{{ID: "call_1", Type: "function", Function: FunctionCall{Name: "f", Arguments: `{"a":"<b>"}`}}}}
	msgs := []Message{
		{Role: RoleSystem, Content: strings.Repeat("system prompt ", 100)},
		{Role: RoleUser, Content: "Cycle 1. Balance 10 USD."},
		full,
		{Role: RoleTool, ToolCallID: "call_1", Name: "f", Content: `{"status":"success","content":{"ok":true}}`},
	}
	for n := 0; n <= len(msgs); n++ {
		enc, err := json.Marshal(msgs[:n])
		require.NoError(t, err)
		bound := SizeBound(msgs[:n])
		require.GreaterOrEqual(t, bound, len(enc), "the bound is never below the encoding")
		require.LessOrEqual(t, bound, len(enc)+n*messageOverhead+callOverhead, "the bound stays close")
	}
}

func BenchmarkSizeBound(b *testing.B) {
	msgs := make([]Message, 200)
	for i := range msgs {
		msgs[i] = Message{Role: RoleUser, Content: strings.Repeat("a window message of ordinary text ", 15)}
	}
	b.Run("bound", func(b *testing.B) {
		for b.Loop() {
			SizeBound(msgs)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(msgs)
		}
	})
}
