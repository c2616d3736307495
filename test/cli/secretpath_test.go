package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyGivenForItsFilePath: a key given where its file's path belongs
// (no such file, more than 20 characters, no "/") is never echoed: the
// refusal names the option, exit 2, and `config` shows the value
// redacted. A path that does not look like a key is named as before
// (docs/configuration.md#secret-files).
func TestKeyGivenForItsFilePath(t *testing.T) {
	const key = "sk-proj-Q7vX2mB9kLr4TzW8yHn3"
	w := newWorld(t)
	tests := []struct {
		name, variable, value, want string
		set                         map[string]string
	}{
		{"bearer key", "BRAMA_API_KEY_FILE", key, "secret file: BRAMA_API_KEY_FILE: no such file", map[string]string{"BRAMA_AUTH": "bearer", "BRAMA_MODEL": "gpt-x"}},
		{"hmac secret", "BRAMA_HMAC_SECRET_FILE", key, "secret file: BRAMA_HMAC_SECRET_FILE: no such file", nil},
		{"most token", "MOST_SERVICE_TOKEN_FILE", key, "secret file: MOST_SERVICE_TOKEN_FILE: no such file", map[string]string{"MOST_BASE_URL": "http://127.0.0.1:1"}},
		{"a path", "BRAMA_API_KEY_FILE", "/nonexistent/provider.key", "secret file: /nonexistent/provider.key: no such file or directory", map[string]string{"BRAMA_AUTH": "bearer", "BRAMA_MODEL": "gpt-x"}},
		{"a short name", "BRAMA_API_KEY_FILE", "provider.key", "secret file: provider.key: no such file or directory", map[string]string{"BRAMA_AUTH": "bearer", "BRAMA_MODEL": "gpt-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := w.env()
			for k, v := range tt.set {
				env[k] = v
			}
			env[tt.variable] = tt.value
			for _, command := range []string{"once", "doctor"} {
				r := run(t, env, command)
				assert.Equal(t, 2, r.code, command)
				assert.Equal(t, "singularity: "+tt.want+"\n", r.stderr, command)
			}
			c := run(t, env, "config")
			require.Equal(t, 0, c.code, c.stderr)
			if tt.value == key {
				assert.NotContains(t, c.stdout+c.stderr, key)
				assert.Contains(t, c.stdout, `= "[redacted: no such file]" # env `+tt.variable)
			} else {
				assert.Contains(t, c.stdout, `"`+tt.value+`"`)
			}
		})
	}
}
