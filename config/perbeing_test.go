package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBeingValuesExpand(t *testing.T) {
	v := BeingValues{Dir: "/s/children/b1", ID: "b1", Workspace: "/w"}
	for _, c := range []struct{ in, want string }{
		{"${SINGULARITY_BEING_DIR}/memory.jsonl", "/s/children/b1/memory.jsonl"},
		{"--id=${SINGULARITY_BEING_ID}", "--id=b1"},
		{"${SINGULARITY_WORKSPACE}", "/w"},
		{"$HOME/${X}/$SINGULARITY_BEING_ID", "$HOME/${X}/$SINGULARITY_BEING_ID"},
		{"plain", "plain"},
	} {
		assert.Equal(t, c.want, v.Expand(c.in), c.in)
	}
}

// TestServersPlaceholders: a misspelt per-being value is refused; a cwd
// naming one is not checked at load; the inline-secret rule reads the
// literal text.
func TestServersPlaceholders(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		path := filepath.Join(dir, "servers.json")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	_, err := LoadServers(write(`{"mcpServers":{"m":{"command":"x","env":{"P":"${SINGULARITY_BEING_DIRR}/m"}}}}`))
	require.Error(t, err)
	assert.Equal(t, `configuration: LAS_SERVERS_FILE: server "m": ${SINGULARITY_BEING_DIRR} is no per-being value (${SINGULARITY_BEING_DIR}, ${SINGULARITY_BEING_ID} or ${SINGULARITY_WORKSPACE})`, err.Error())
	servers, err := LoadServers(write(`{"mcpServers":{"m":{"command":"x","cwd":"${SINGULARITY_BEING_DIR}","env":{"ID":"${SINGULARITY_BEING_ID}"}}}}`))
	require.NoError(t, err)
	assert.Equal(t, "${SINGULARITY_BEING_DIR}", servers[0].Dir)
	secrets := secretsOf(servers)
	require.Len(t, secrets, 1, "the literal text is at least 8 bytes")
	assert.Equal(t, "${SINGULARITY_BEING_ID}", string(secrets[0].Reveal()))
}
