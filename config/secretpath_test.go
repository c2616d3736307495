package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/supervision/fault"
)

func TestHidesSecretPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	existing := "an-existing-file-named-like-a-key"
	require.NoError(t, os.WriteFile(existing, []byte("k"), 0o600))
	tests := []struct {
		path string
		want bool
	}{
		{"sk-proj-0123456789abcdefghij", true},      // a key: long, no "/", no such file
		{"123456789012345678901", true},             // 21 characters
		{"12345678901234567890", false},             // 20 characters: named
		{"secrets/sk-proj-0123456789abcdef", false}, // a path: named
		{filepath.Join(dir, "no-such-file-at-all.key"), false},
		{existing, false}, // it exists: a file name, not a key
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, HidesSecretPath(tt.path), tt.path)
	}
}

func TestReadSecretOptionDoesNotEchoAKey(t *testing.T) {
	t.Chdir(t.TempDir())
	const key = "sk-proj-0123456789abcdefghij"
	_, err := readSecretOption("BRAMA_API_KEY_FILE", key)
	require.Error(t, err)
	assert.Equal(t, "secret file: BRAMA_API_KEY_FILE: no such file", err.Error())
	assert.Equal(t, fault.ClassSecret, fault.ClassOf(err))
	_, err = readSecretOption("BRAMA_API_KEY_FILE", "missing.key")
	assert.Equal(t, "secret file: missing.key: no such file or directory", err.Error())
}
