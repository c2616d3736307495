package brama

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
)

// TestBodyReadsAsItWrites: the body read in any pieces is the body its
// writer gives, as long as its size says, every time it is read (a retry
// reads it again); its digest is that of those bytes.
func TestBodyReadsAsItWrites(t *testing.T) {
	var window state.Encoded
	for i := range 5 {
		raw, err := json.Marshal(chat.Message{Role: chat.RoleUser, Content: framing.Prefix + string(rune('1'+i)) + framing.End})
		require.NoError(t, err)
		window = append(window, state.Pack(raw))
	}
	system := []chat.Message{{Role: chat.RoleSystem, Content: "You are Ada."}}
	tools := []chat.Tool{{Type: "function", Function: chat.Function{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	cases := map[string]Params{
		"system and window": {Model: "m", Messages: system, Encoded: window, Tools: tools, MaxTokens: 10, BeingID: "b"},
		"window only":       {Model: "m", Encoded: window},
		"system only":       {Model: "m", Messages: system},
		"nothing":           {Model: "m"},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Client{maxField: gateway.FieldMaxTokens, cacheKey: true}
			want, err := c.encode(p)
			require.NoError(t, err)
			require.True(t, json.Valid(want), "%s", want)
			body, err := c.body(p)
			require.NoError(t, err)
			require.Len(t, want, body.size)
			require.NoError(t, iotest.TestReader(body.reader(), want))
			var again bytes.Buffer
			_, err = again.ReadFrom(iotest.HalfReader(body.reader()))
			require.NoError(t, err)
			require.Equal(t, string(want), again.String(), "read again in small pieces")
			require.Equal(t, bodyDigest(want), body.sha256())
		})
	}
}
