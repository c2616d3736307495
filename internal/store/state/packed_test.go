package state

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
)

// TestPackRoundTrip: every packed message gives back its exact bytes,
// its length without unpacking, and its prefixes; and the phrases and
// repeats a conversation is full of take less room than the text.
func TestPackRoundTrip(t *testing.T) {
	framing := framing.Prefix + "57" + framing.AfterCycle + "9.87 USD" + framing.AfterBalance + "0" +
		framing.AfterEarned + "-0.13" + framing.AfterNet + "test-model" + framing.AfterModel +
		strings.Repeat("memory_recall:success, ", 9) + "memory_recall:success" + framing.End
	cases := []struct {
		name   string
		msg    chat.Message
		raw    string // when set, the bytes to pack instead of msg's encoding
		atMost int    // the packed size must not exceed this share of the text, in percent
	}{
		{name: "framing", msg: chat.Message{Role: chat.RoleUser, Content: framing}, atMost: 25},
		{name: "tool call", msg: chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
			{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "memory_recall", Arguments: `{"query":"price"}`}},
			{ID: "call_2", Type: "function", Function: chat.FunctionCall{Name: "memory_recall", Arguments: `{"query":"price"}`}},
		}}, atMost: 60},
		{name: "tool result", msg: chat.Message{Role: chat.RoleTool, ToolCallID: "call_1", Name: "memory_recall", Content: `{"status":"success","memories":[]}`}, atMost: 100},
		{name: "reply", msg: chat.Message{Role: chat.RoleAssistant, Content: "done"}, atMost: 100},
		{name: "escapes", msg: chat.Message{Role: chat.RoleUser, Content: "a\x01b <html> \u2028 \"q\" \\ \t\n"}, atMost: 100},
		{name: "nothing to pack", raw: `{"x":1}`, atMost: 100},
		{name: "the reference byte itself", raw: "\x01\x01{\x01\"\x01", atMost: 200},
		{name: "one long run", raw: `"` + strings.Repeat("a", 1000) + `"`, atMost: 5},
		{name: "a repeat at the longest reach", raw: "abcdefgh" + strings.Repeat("-", copyReach-8) + "abcdefgh", atMost: 101},
		{name: "a repeat beyond reach", raw: "abcdefgh" + strings.Repeat("-", copyReach) + "abcdefgh", atMost: 101},
		{name: "empty", raw: "", atMost: 100},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			if tt.raw == "" && tt.name != "empty" {
				raw = EncodeMessage(tt.msg)
			}
			p := Pack(raw)
			assert.Equal(t, string(raw), string(p.Unpack()), "unpacked")
			assert.Equal(t, string(raw), string(p.AppendTo([]byte("x"))[1:]), "appended after other bytes")
			assert.Equal(t, len(raw), p.Len(), "length")
			assert.LessOrEqual(t, len(p)*100, tt.atMost*max(len(raw), 1), "packed %d of %d bytes", len(p), len(raw))
			for _, n := range []int{0, 1, 5, 30, len(raw), len(raw) + 1} {
				prefix := raw[:min(n, len(raw))]
				assert.True(t, p.HasPrefix(prefix), "prefix of %d bytes", n)
				other := append(bytes.Clone(prefix), '#')
				assert.False(t, p.HasPrefix(other), "a longer prefix than its text, %d bytes", n)
			}
			if json.Valid(raw) {
				out, err := json.Marshal(struct{ M Packed }{p})
				require.NoError(t, err)
				assert.Equal(t, `{"M":`+string(raw)+`}`, string(out), "encodes as its text")
			}
		})
	}
}

// TestPackedUnknownReference: bytes that are no packed message are not
// read as one silently.
func TestPackedUnknownReference(t *testing.T) {
	assert.Panics(t, func() { Packed{packRef, 0x7f}.Unpack() }, "a phrase that does not exist")
	assert.Panics(t, func() { Packed{'a', packRef, packCopy + 1, 0, 9}.Unpack() }, "a reference before the start")
}

// FuzzPack: any bytes pack and unpack to themselves, with the length and
// the prefixes right.
func FuzzPack(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"` + framing.Prefix + `1. Balance: 1 USD."}`))
	f.Add([]byte("\x01\x00\x01\xff"))
	f.Add([]byte(strings.Repeat("ab:success, ", 30)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := Pack(raw)
		if got := p.Unpack(); !bytes.Equal(got, raw) {
			t.Fatalf("Pack(%q) unpacks to %q", raw, got)
		}
		if p.Len() != len(raw) {
			t.Fatalf("Pack(%q).Len() = %d", raw, p.Len())
		}
		if n := len(raw) / 2; !p.HasPrefix(raw[:n]) {
			t.Fatalf("Pack(%q) has not its first %d bytes", raw, n)
		}
	})
}
