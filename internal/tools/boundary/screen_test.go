package boundary

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
)

func TestRelativize(t *testing.T) {
	const ws = "/srv/ws"
	tests := []struct{ in, want string }{
		{"Successfully wrote to /srv/ws/notes/a.txt", "Successfully wrote to notes/a.txt"},
		{"/srv/ws", "."},
		{"/srv/ws/", "."},
		{"Allowed directories:\n/srv/ws", "Allowed directories:\n."},
		{"(/srv/ws/a), '/srv/ws/b'", "(a), 'b'"},
		{"file:///srv/ws/x.md", "x.md"},
		{"FILE:///srv/ws", "."},
		{"/srv/ws2/x", "/srv/ws2/x"},
		{"/other/srv/ws/x", "/other/srv/ws/x"},
		{"no path here", "no path here"},
		{"/srv/ws/a and /srv/ws/b", "a and b"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, relativize(tt.in, ws), tt.in)
	}
}

func TestScreenRules(t *testing.T) {
	secrets := NewSecrets([]byte("tok-12345"), []byte("k\"ey"), nil)
	s := Screen{Workspace: "/srv/ws", Secrets: secrets}
	tests := []struct {
		name     string
		o        outcome.Outcome
		envelope string // expected tool message
		rejected bool
	}{
		{
			name:     "workspace paths are made relative before screening",
			o:        outcome.Succeeded(json.RawMessage(`{"content":[{"type":"text","text":"Successfully wrote to /srv/ws/notes/a.txt"}]}`)),
			envelope: `{"chat_id":null,"content":{"content":[{"type":"text","text":"Successfully wrote to notes/a.txt"}]},"error_code":null,"message_id":null,"status":"success"}`,
		},
		{
			name:     "a listing is plain text",
			o:        outcome.Succeeded(json.RawMessage(`{"content":[{"type":"text","text":"[FILE] a.txt\n[DIR] notes"}]}`)),
			envelope: `{"chat_id":null,"content":{"content":[{"type":"text","text":"[FILE] a.txt\n[DIR] notes"}]},"error_code":null,"message_id":null,"status":"success"}`,
		},
		{
			name:     "secrets are redacted, escaped ones too, in keys and embedded JSON",
			o:        outcome.Succeeded(json.RawMessage(`{"k\"ey":"{\"a\":\"Bearer tok-12345\"}","m":"401: bad bearer tok-12345"}`)),
			envelope: `{"chat_id":null,"content":{"[redacted]":"{\"a\":\"Bearer [redacted]\"}","m":"401: bad bearer [redacted]"},"error_code":null,"message_id":null,"status":"success"}`,
		},
		{
			name:     "numbers and member order survive a rewrite",
			o:        outcome.Succeeded(json.RawMessage(`{"z":1.50,"a":"/srv/ws/x","m":[true,null,2e3]}`)),
			envelope: `{"chat_id":null,"content":{"z":1.50,"a":"x","m":[true,null,2e3]},"error_code":null,"message_id":null,"status":"success"}`,
		},
		{
			name:     "a withheld success still reads success",
			o:        outcome.Succeeded(json.RawMessage(`{"text":"see /etc/passwd"}`)),
			envelope: `{"status":"success","error_code":"sensitive_output_rejected"}`,
			rejected: true,
		},
		{
			name:     "a withheld indeterminate call stays indeterminate",
			o:        outcome.Unknown("mcp", "lost at /var/run/x"),
			envelope: `{"status":"indeterminate","error_code":"sensitive_output_rejected"}`,
			rejected: true,
		},
		{
			name:     "a withheld failure reads failed",
			o:        outcome.Failure("remote_tool", "cannot open /var/db"),
			envelope: outcome.RejectedEnvelope,
			rejected: true,
		},
		{
			name:     "a path sharing the workspace prefix stays a violation",
			o:        outcome.Succeeded(json.RawMessage(`"/srv/ws2/x"`)),
			envelope: `{"status":"success","error_code":"sensitive_output_rejected"}`,
			rejected: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := s.Apply(tt.o)
			assert.Equal(t, tt.rejected, reason != "", reason)
			assert.Equal(t, tt.rejected, got.Rejected)
			assert.Equal(t, tt.envelope, got.Envelope())
			assert.NotContains(t, reason, "tok-12345")
		})
	}
}

func TestSecretsRedactString(t *testing.T) {
	s := NewSecrets([]byte("abc"), []byte("abcdef"))
	assert.Equal(t, "x [redacted] y [redacted]", s.RedactString("x abcdef y abc"))
	var none *Secrets
	assert.Equal(t, "abc", none.RedactString("abc"))
	assert.Zero(t, none.Len())
}

func TestSecretsRedactJSONEscapedForms(t *testing.T) {
	tests := []struct {
		name, secret, text string
	}{
		{"as is", "sk-a/b", "key sk-a/b"},
		{"escaped slash", "sk-a/b", `key sk-a\/b`},
		{"html escapes", "k&<>y-1", `key k\u0026\u003c\u003ey-1`},
		{"html escapes upper hex", "k&<>y-1", `key k\u0026\u003C\u003Ey-1`},
		{"quote and backslash", `k"\y`, `key k\"\\y`},
		{"non-ASCII escaped", "klucz-ż", `key klucz-\u017c`},
		{"astral escaped", "k-😀", `key k-\ud83d\ude00`},
		{"percent", "k y/&", "key k+y%2F%26"},
		{"percent lower hex", "k y/&", "key k%20y%2f&"},
		{"base64", "sk-?>>?", "key c2stPz4+Pw=="},
		{"base64url unpadded", "sk-?>>?", "key c2stPz4-Pw"},
		{"escaped twice", "sk-a/b", `key sk-a\\\/b`},
		{"bearer credential alone", "Bearer tok-12345678", "key tok-12345678"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSecrets([]byte(tt.secret))
			assert.Equal(t, "key [redacted]", s.RedactString(tt.text))
			assert.Equal(t, 1, s.Len())
		})
	}
}

// TestSecretsRedactJSONAtAnyDepth: a secret inside JSON text inside a
// JSON string, to any depth, is found by Mentioned and redacted by
// RedactJSON in the decoded strings; member order and numbers are kept,
// and a document that mentions no secret is returned as it is.
func TestSecretsRedactJSONAtAnyDepth(t *testing.T) {
	const key = "sk-deep/key&1"
	s := NewSecrets([]byte(key))
	nest := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	tests := []struct {
		name, doc string
	}{
		{"a member", nest(map[string]any{"z": 1.50, "a": "the key " + key})},
		{"arguments", nest(map[string]any{"arguments": nest(map[string]string{"content": "the key " + key})})},
		{"three deep", nest(map[string]any{"m": nest(map[string]any{"arguments": nest(map[string]string{"content": key})})})},
		{"in a key", `{"` + key + `":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, s.Mentioned([]byte(tt.doc)))
			out := s.RedactJSON([]byte(tt.doc))
			require.True(t, json.Valid(out), "%s", out)
			assert.False(t, s.Mentioned(out), "%s", out)
			assert.Contains(t, string(out), Redacted)
		})
	}
	order := []byte(`{"z":1.50,"a":"` + key + `"}`)
	assert.Equal(t, `{"z":1.50,"a":"[redacted]"}`, string(s.RedactJSON(order)))
	clean := []byte(`{"z": 1.50, "a": "nothing"}`)
	assert.Equal(t, clean, s.RedactJSON(clean), "untouched, spacing and all")
	assert.False(t, s.Mentioned(clean))
}

func TestRewriteLeavesUntouchedResultsAlone(t *testing.T) {
	raw := json.RawMessage(`{ "a" : 1 }`)
	out, err := Screen{Workspace: "/srv/ws"}.Rewrite(raw)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(out))
}
