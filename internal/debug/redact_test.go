package debug

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/test/testkit"
)

func TestKeyAllowed(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"cycle", true},
		{"balance", true},
		{"tool_count", true},
		{"last_restart_reason", true},
		{"tokens_used", true}, // "token" only as the whole key or a _suffix
		{"secret", false},
		{"api_token", false},
		{"API-Token", false},
		{"hmac secret", false},
		{"password", false},
		{"db_passwd", false},
		{"api_key", false},
		{"Authorization", false},
		{"session_cookie", false},
		{"private_key", false},
		{"privatekey", false},
		{"credential_path", false},
		{"brama_secret_path", false},
		{"key_path", false},
		{"refresh_token", false},
		{"/etc/shadow", false}, // a raw path as a key
		{"nul\x00", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, keyAllowed(tt.key), "%q", tt.key)
	}
}

func TestGuardText(t *testing.T) {
	g := newGuard([]string{
		"WISENT_APP_AGENT_AUTH_SECRET=s3cr3t-value",
		"GITHUB_TOKEN=ghp_abcdef",
		"SHORT_SECRET=abc", // too short to look for
		"BRAMA_MODEL=test-model",
		"PATH=/usr/bin",
		"MALFORMED",
	})
	tests := []struct{ in, want string }{
		{"running", "running"},
		{"test-model", "test-model"}, // not a secret-named variable
		{"abc", "abc"},
		{"value s3cr3t-value inside", Redacted},
		{"ghp_abcdef", Redacted},
		{"exec: /usr/bin/node: not found", Redacted},
		{"file:///tmp/x", Redacted},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", Redacted},
		{"nul\x00", Redacted},
		{"{not json", "{not json"}, // plain text since stage 2 of the output boundary
		{`{"api_key":"x"}`, Redacted},
		{`{"ok":1}`, `{"ok":1}`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, g.text(tt.in), "%q", tt.in)
	}
}

type unencodable struct{ C chan int }

func TestGuardFigures(t *testing.T) {
	g := newGuard(nil)
	got := g.figures(map[string]any{
		"balance":  testkit.USD("1.50"),
		"bad":      unencodable{C: make(chan int)},
		"count":    uint64(1 << 63),
		"pid":      "reserved",
		"auth":     map[string]string{"authorization": "Bearer x", "scheme": "hmac"},
		"list":     []map[string]any{{"cookie": "c", "n": 1}},
		"nil_list": []int(nil),
	})
	raw, err := json.Marshal(got)
	assert.NoError(t, err)
	assert.JSONEq(t, `{"balance":"1.5","bad":"(unencodable)","count":9223372036854775808,
		"auth":{"scheme":"hmac"},"list":[{"n":1}],"nil_list":null}`, string(raw))
	assert.Equal(t, json.Number("9223372036854775808"), got["count"], "integers stay exact")
}

// TestPlainTextPassesTheBoundary holds the guard's fast path to the
// output boundary: every string plainText accepts passes boundary.Check
// as a JSON string, and strings the boundary refuses are not plain.
func TestPlainTextPassesTheBoundary(t *testing.T) {
	samples := []string{
		"", "running", "test-model", "9.876543210001", "singularity_memory_recall:success",
		"agent-00000042", "echo__echo:error", "exit status 1", "a-b-c-d", "----", "x@y#z%1+2=3,4",
		"-----BEGIN RSA PRIVATE KEY-----", "/etc/passwd", "file://x", "{\"a\":1}", "[1]", "nul\x00",
		"tab\there", "quote\"", "back\\slash", "<html>", "é", strings.Repeat("a", maxPlain+1),
	}
	for c := 0; c < 128; c++ {
		samples = append(samples, "x"+string(rune(c))+"y", string(rune(c)))
	}
	for _, s := range samples {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		passes := boundary.Check(raw) == nil
		if plainText(s) {
			assert.True(t, passes, "plainText accepts %q, which the boundary refuses", s)
			assert.Equal(t, `"`+s+`"`, string(raw), "plainText accepts %q, which encodes with escapes", s)
		}
	}
	assert.False(t, plainText("-----BEGIN"), "a PEM marker is never plain")
	assert.False(t, plainText("/tmp/x"), "a path is never plain")
	assert.True(t, plainText("exit status 1"))
}

func TestGuardCachesVerdicts(t *testing.T) {
	g := newGuard([]string{"APP_SECRET=hunter22"})
	for range 2 { // the second round is answered from the cache
		assert.Equal(t, Redacted, g.text("/var/lib/x"))
		assert.Equal(t, Redacted, g.text("pw hunter22"))
		assert.Equal(t, `{"ok":1}`, g.text(`{"ok":1}`))
		assert.True(t, g.key("cycle"))
		assert.False(t, g.key("api_key"))
	}
}

// TestTreeOfRedactsRuntimeSecrets: a tree holding one of the runtime's
// secrets (HandlerConfig.Secrets), as written or encoded, in a status,
// a figure's value or a figure's key, is served with that text
// "(redacted)" and that key dropped; other texts stay.
func TestTreeOfRedactsRuntimeSecrets(t *testing.T) {
	const key = "sk-debug-tree-4f1a9c"
	tree := Node{PID: "family", Kind: "family", Name: "family", Status: "running", Children: []Node{{
		PID: "family/being-ada", Kind: "being", Name: "Ada", Status: "echoed " + key,
		Figures: map[string]any{
			"last_error": "c2stZGVidWctdHJlZS00ZjFhOWM=", // base64 of the key
			"nested":     map[string]any{"list": []any{"fine", "Bearer " + key}},
			key:          "a key of its own",
			"cycle":      json.Number("3"),
		},
	}}}
	cfg := HandlerConfig{Secrets: boundary.NewSecrets([]byte(key)), Elsewhere: func(context.Context) (Node, error) { return tree, nil }}
	got, err := TreeOf(context.Background(), cfg)
	require.NoError(t, err)
	ada := got.Children[0]
	assert.Equal(t, "running", got.Status)
	assert.Equal(t, Redacted, ada.Status)
	assert.Equal(t, Redacted, ada.Figures["last_error"])
	assert.Equal(t, []any{"fine", Redacted}, ada.Figures["nested"].(map[string]any)["list"])
	assert.NotContains(t, ada.Figures, key)
	assert.Equal(t, json.Number("3"), ada.Figures["cycle"])
}
