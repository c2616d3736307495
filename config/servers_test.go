package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"

	"github.com/wisent/singularity/supervision/fault"
)

func TestLoadServers(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "search.key")
	require.NoError(t, os.WriteFile(key, []byte("Bearer sk-search-1\n"), 0o600))
	path := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {
  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/srv/mem.json", "B": "2"}, "cwd": "`+dir+`"},
  "search": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": {"file": "`+key+`"}}},
  "alpha": {"command": "node"}
}}`), 0o600))
	servers, err := LoadServers(path)
	require.NoError(t, err)
	require.Len(t, servers, 3)
	assert.Equal(t, []string{"memory", "search", "alpha"}, []string{servers[0].Name, servers[1].Name, servers[2].Name}, "file order")
	mem := servers[0]
	assert.Equal(t, "npx", mem.Command)
	assert.Equal(t, []string{"-y", "@modelcontextprotocol/server-memory"}, mem.Args)
	assert.Equal(t, dir, mem.Dir)
	assert.Equal(t, []Setting{{Name: "B", Value: "2"}, {Name: "MEMORY_FILE_PATH", Value: "/srv/mem.json"}}, mem.Env)
	search := servers[1]
	assert.True(t, search.Remote())
	require.Len(t, search.Headers, 1)
	assert.Equal(t, "Bearer sk-search-1", search.Headers[0].Reveal())
	assert.Empty(t, search.Headers[0].Value, "a secret is held as a secret")

	rt := Runtime{Las: Las{Servers: servers}}
	var secrets []string
	for _, s := range rt.Secrets() {
		if s.IsSet() {
			secrets = append(secrets, string(s.Reveal()))
		}
	}
	assert.Equal(t, []string{"/srv/mem.json", "Bearer sk-search-1"}, secrets, "B=2 is short and not key-like")
}

func TestIsSecretSetting(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		{"API_KEY", "k", true},
		{"github-token", "ab", true},
		{"Authorization", "Bearer x", true},
		{"PASSWORD", "", false},
		{"VERBOSE", "1", false},
		{"MODE", "true", false},
		{"LEVEL", "1234567", false},
		{"REGION", "12345678", true},
		{"TOKENS", "64", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, IsSecretSetting(tt.name, tt.value), "%s=%q", tt.name, tt.value)
	}
}

func TestLoadServersSecretFileRules(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "open.key")
	require.NoError(t, os.WriteFile(key, []byte("k"), 0o644))
	path := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers":{"a":{"command":"x","env":{"K":{"file":"`+key+`"}}}}}`), 0o600))
	_, err := LoadServers(path)
	require.Error(t, err)
	assert.Equal(t, "secret file: "+key+" must not be group/world accessible", err.Error())
	assert.Equal(t, 2, fault.ExitCode(err))
}

func TestLoadLasWithServersFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600))
	// No entrypoint and no release pins are needed.
	l, err := LoadLas(LasFlags{Entrypoint: "/nonexistent", ServersFile: path})
	require.NoError(t, err)
	assert.Equal(t, path, l.ServersFile)
	assert.Empty(t, l.Servers)
	// A pin that is set is still checked.
	_, err = LoadLas(LasFlags{ServersFile: path, Manifest: "relative"})
	require.EqualError(t, err, "configuration: LAS release manifest must be an absolute regular file")
}

func TestRuntimeSecretsHoldEveryCredential(t *testing.T) {
	rt := Runtime{
		Brama: Brama{Secret: identity.NewSecret([]byte("hmac-1")), APIKey: identity.NewSecret([]byte("bearer-1"))},
		Most:  Most{Token: identity.NewSecret([]byte("most-1"))},
		Las:   Las{Servers: []Server{{Name: "a", Env: []Setting{{Name: "API_KEY", Value: "k"}, {Name: "V", Value: "1"}}}}},
	}
	var got []string
	for _, s := range rt.Secrets() {
		if s.IsSet() {
			got = append(got, string(s.Reveal()))
		}
	}
	assert.Equal(t, []string{"hmac-1", "bearer-1", "most-1", "k"}, got)
}

func TestLoadServersRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		name, entry, want string
	}{
		{"missing cwd", `{"command": "x", "cwd": "` + missing + `"}`, `server "a": cwd ` + missing + ` does not exist`},
		{"relative missing cwd", `{"command": "x", "cwd": "no/such/dir"}`, `server "a": cwd no/such/dir does not exist`},
		{"cwd a file", `{"command": "x", "cwd": "` + file + `"}`, `server "a": cwd ` + file + ` is not a directory`},
		{"disabled", `{"command": "x", "disabled": true}`, `server "a": unknown key "disabled"`},
		{"misspelt args", `{"command": "x", "agrs": ["y"]}`, `server "a": unknown key "agrs"`},
		{"remote transport", `{"url": "https://mcp.example/mcp", "transport": "sse"}`, `server "a": unknown key "transport"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "servers.json")
			require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"a": `+c.entry+`}}`), 0o600))
			_, err := LoadServers(path)
			require.Error(t, err)
			assert.Equal(t, "configuration: LAS_SERVERS_FILE: "+c.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
		})
	}
}
