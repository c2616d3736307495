package cli_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// writeServers writes a servers file for the pinned npm servers of
// test/peers, run with node.
func writeServers(t *testing.T, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	// Written by hand: the file's order is the catalogue's order.
	b := []byte(`{"mcpServers": {
  "filesystem": {"command": ` + q(node) + `, "args": [` + q(testkit.NPMServer(t, "server-filesystem")) + `]},
  "memory": {"command": ` + q(node) + `, "args": [` + q(testkit.NPMServer(t, "server-memory")) + `], "env": {"MEMORY_FILE_PATH": ` + q(filepath.Join(dir, "memory.jsonl")) + `}},
  "everything": {"command": ` + q(node) + `, "args": [` + q(testkit.NPMServer(t, "server-everything")) + `]}
}}`)
	path := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// TestToolsWithServersFile: `tools --format table` over a servers file
// shows each server's tools under "<server>__", then the built-ins; no
// LAS_MCP_ENTRYPOINT or release pin is needed.
func TestToolsWithServersFile(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"PATH": os.Getenv("PATH"), "LAS_SERVERS_FILE": writeServers(t, dir), "SINGULARITY_WORKSPACE": dir}
	r := run(t, env, "tools", "--format", "table")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	names := map[string]bool{}
	for _, l := range lines {
		names[strings.SplitN(l, "\t", 2)[0]] = true
	}
	for _, want := range []string{"filesystem__read_file", "filesystem__write_file", "filesystem__list_directory", "memory__create_entities", "memory__read_graph", "everything__echo"} {
		assert.True(t, names[want], want)
	}
	assert.Equal(t, builtinTable, lines[len(lines)-len(builtinTable):], "built-ins come after the servers' tools")
	assert.True(t, strings.HasPrefix(lines[0], "filesystem__"), "servers in file order: %s", lines[0])

	// LAS_SKIP drops a server by name.
	env["LAS_SKIP"] = "everything"
	r = run(t, env, "tools", "--format", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "everything__")
	assert.Contains(t, r.stdout, "memory__read_graph")
}

// TestToolsTableIsTheSeeds: with no Las tool (an empty servers file),
// `tools --format table` prints byte for byte what the seed shows, one
// name<TAB>description line per built-in tool and no header.
func TestToolsTableIsTheSeeds(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"mcpServers": {}}`), 0o600))
	r := run(t, map[string]string{"PATH": os.Getenv("PATH"), "LAS_SERVERS_FILE": empty}, "tools", "--format", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `singularity_memory_remember	Persist a memory owned by this digital being
singularity_memory_recall	Recall persistent memories containing a query
singularity_self_set_prompt	Replace this being's persistent system prompt
singularity_self_add_rule	Add a persistent self-imposed rule
singularity_self_add_learning	Record a persistent learning that changes future decisions
singularity_self_switch_model	Switch future cognition calls to another available Brama model
singularity_spawn_child	Create and start a child digital being with separate state
singularity_file_read	Read one UTF-8 file inside the configured workspace
singularity_file_write	Atomically create or replace one UTF-8 file inside the configured workspace
`, r.stdout)
}

// TestReadmeServersFile runs the servers file of the README's "Give a
// being your MCP servers" as written, with npx resolving the packages
// from test/peers (the working directory of each entry is the only
// change), and lists its tools.
func TestReadmeServersFile(t *testing.T) {
	testkit.NPMServer(t, "server-filesystem")
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skipf("npx is not installed: %v", err)
	}
	readme, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "README.md"))
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)## Give a being your MCP servers.*?```json\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, block, "the README section and its json block")
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(block[1], &doc))
	require.Contains(t, doc.MCPServers, "filesystem")
	require.Contains(t, doc.MCPServers, "memory")
	dir := t.TempDir()
	peers := filepath.Join(testkit.ModuleRoot(t), "test", "peers")
	for _, s := range doc.MCPServers {
		s["cwd"] = peers
		if env, ok := s["env"].(map[string]any); ok {
			for k := range env {
				if strings.HasSuffix(k, "_PATH") {
					env[k] = filepath.Join(dir, k)
				}
			}
		}
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	r := run(t, map[string]string{"PATH": os.Getenv("PATH"), "HOME": dir, "LAS_SERVERS_FILE": path, "SINGULARITY_WORKSPACE": dir}, "tools", "--format", "table")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "filesystem__write_file\t")
	assert.Contains(t, r.stdout, "memory__read_graph\t")
}

// TestServersFileRefusals: a bad servers file is refused before anything
// starts, with the sentence of docs/configuration.md, exit 2.
func TestServersFileRefusals(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, file, want string }{
		{"not json", `{"mcpServers":`, "singularity: configuration: LAS_SERVERS_FILE: not a JSON object: unexpected end of JSON input"},
		{"no servers object", `{"servers":{}}`, `singularity: configuration: LAS_SERVERS_FILE: "mcpServers" must be an object`},
		{"bad name", `{"mcpServers":{"a__b":{"command":"x"}}}`, `singularity: configuration: LAS_SERVERS_FILE: server name "a__b" must be ASCII letters, digits, _ or - without __`},
		{"neither", `{"mcpServers":{"a":{"args":["x"]}}}`, `singularity: configuration: LAS_SERVERS_FILE: server "a" needs a "command" or a "url"`},
		{"bad url", `{"mcpServers":{"a":{"url":"ftp://x"}}}`, `singularity: configuration: LAS_SERVERS_FILE: server "a": "url" must be an http or https URL`},
		{"relative secret", `{"mcpServers":{"a":{"command":"x","env":{"K":{"file":"k.txt"}}}}}`, `singularity: configuration: LAS_SERVERS_FILE: server "a": env "K" must be a string or {"file": "<absolute path>"}`},
		{"missing secret", `{"mcpServers":{"a":{"url":"https://x.example/mcp","headers":{"Authorization":{"file":"/nonexistent/k"}}}}}`, "singularity: secret file: /nonexistent/k: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			require.NoError(t, os.WriteFile(path, []byte(tt.file), 0o600))
			r := run(t, map[string]string{"PATH": os.Getenv("PATH"), "LAS_SERVERS_FILE": path}, "tools")
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Equal(t, tt.want+"\n", testkit.LastLine(r.stderr))
		})
	}
}

// TestBadInputFilesExit2: a servers file with a cwd that does not exist
// or a key the format does not have, a prices file that lists a model
// twice, and a price out of range are refused at configuration time,
// exit 2, by every command that loads them.
func TestBadInputFilesExit2(t *testing.T) {
	w := newWorld(t)
	write := func(name, text string) string {
		path := filepath.Join(w.dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	missing := filepath.Join(w.dir, "no-such-dir")
	pair := `{"input_usd_per_million": "1", "output_usd_per_million": "1"}`
	cases := []struct {
		name     string
		set      map[string]string
		commands []string
		want     string
	}{
		{"missing cwd", map[string]string{"LAS_SERVERS_FILE": write("cwd.json", `{"mcpServers": {"fs": {"command": "true", "cwd": "`+missing+`"}}}`)},
			[]string{"once", "run", "doctor", "tools"}, `configuration: LAS_SERVERS_FILE: server "fs": cwd ` + missing + ` does not exist`},
		{"unknown key", map[string]string{"LAS_SERVERS_FILE": write("disabled.json", `{"mcpServers": {"fs": {"command": "true", "disabled": true}}}`)},
			[]string{"once", "run", "doctor", "tools"}, `configuration: LAS_SERVERS_FILE: server "fs": unknown key "disabled"`},
		{"model twice", map[string]string{"BRAMA_PRICES_FILE": write("twice.json", `{"m": `+pair+`, "m": `+pair+`}`)},
			[]string{"once", "run", "doctor"}, `configuration: BRAMA_PRICES_FILE: model "m" is listed twice`},
		{"price out of range", map[string]string{"BRAMA_PRICES_FILE": write("range.json", `{"m": {"input_usd_per_million": "1e400", "output_usd_per_million": "1"}}`)},
			[]string{"once", "run", "doctor"}, `configuration: BRAMA_PRICES_FILE: model "m": input_usd_per_million is out of range`},
		{"variable out of range", map[string]string{"BRAMA_INPUT_PRICE_USD_PER_MILLION": "1e99999999999999999999"},
			[]string{"once", "run", "doctor"}, `configuration: BRAMA_INPUT_PRICE_USD_PER_MILLION: input price is out of range`},
	}
	for _, c := range cases {
		for _, command := range c.commands {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				env := w.env()
				maps.Copy(env, c.set)
				r := run(t, env, command)
				assert.Equal(t, 2, r.code)
				assert.Equal(t, "singularity: "+c.want+"\n", r.stderr)
				assert.Empty(t, r.stdout)
			})
		}
	}
}

// TestLasCannotStart: a Las command that cannot be executed (missing,
// not executable, a script whose interpreter is missing) fails at once
// with "mcp: cannot start Las: <reason>", exit 3, and is not restarted;
// with a servers file the sentence names the server.
func TestLasCannotStart(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("not a program\n"), 0o600))
	script := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/nonexistent/interpreter\n"), 0o700))
	missing := filepath.Join(dir, "missing")
	cases := []struct{ name, command, reason string }{
		{"missing", missing, "fork/exec " + missing + ": no such file or directory"},
		{"not executable", plain, "fork/exec " + plain + ": permission denied"},
		{"bad interpreter", script, "fork/exec " + script + ": no such file or directory"},
	}
	for _, c := range cases {
		t.Run(c.name+"/tools", func(t *testing.T) {
			args := append([]string{"tools", "--agent-id", "agent-1"}, w.lasFlags(c.command, w.valid["LAS_MCP_ENTRYPOINT"])...)
			r := run(t, map[string]string{"PATH": os.Getenv("PATH")}, args...)
			assert.Equal(t, 3, r.code)
			assert.Contains(t, r.stderr, "singularity: mcp: cannot start Las: "+c.reason+"\n")
			assert.NotContains(t, r.stderr, "restart")
			assert.Empty(t, r.stdout)
		})
		for _, command := range []string{"once", "run"} {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				env := w.env()
				env["LAS_COMMAND"] = c.command
				env["SINGULARITY_STATE_DIR"] = t.TempDir()
				r := run(t, env, command)
				assert.Equal(t, 3, r.code)
				assert.Contains(t, r.stderr, "singularity: mcp: cannot start Las: "+c.reason+"\n")
				assert.NotContains(t, r.stderr, "restart")
			})
		}
		t.Run(c.name+"/servers", func(t *testing.T) {
			q, _ := json.Marshal(c.command)
			path := filepath.Join(t.TempDir(), "servers.json")
			require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"fs": {"command": `+string(q)+`}}}`), 0o600))
			r := run(t, map[string]string{"PATH": os.Getenv("PATH"), "LAS_SERVERS_FILE": path}, "tools")
			assert.Equal(t, 3, r.code)
			assert.Contains(t, r.stderr, "singularity: mcp: cannot start Las fs: "+c.reason+"\n")
			assert.NotContains(t, r.stderr, "restart")
			assert.Empty(t, r.stdout)
		})
	}
}

// TestServersFileNeedsNoPins: with Brama's full identity but a servers
// file and none of the four LAS_RELEASE_* pins, doctor and once get past
// the configuration (they fail later, at the Brama this world does not
// run, exit 3), and no surface is required. (run, which lives on through
// a Brama it cannot reach, is shown in test/e2e's TestStandaloneFirstHour.)
func TestServersFileNeedsNoPins(t *testing.T) {
	w := newWorld(t)
	empty := filepath.Join(w.dir, "servers.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"mcpServers": {}}`), 0o600))
	for _, command := range []string{"doctor", "once"} {
		env := w.env()
		for _, pin := range []string{"LAS_RELEASE_MANIFEST_FILE", "LAS_RELEASE_MANIFEST_SIGNATURE_FILE", "LAS_RELEASE_TRUST_STORE_FILE", "LAS_RELEASE_WATERMARK_FILE"} {
			delete(env, pin)
		}
		env["LAS_SERVERS_FILE"] = empty
		env["SINGULARITY_STATE_DIR"] = filepath.Join(w.dir, command)
		env["BRAMA_BASE_URL"] = "http://127.0.0.1:1"
		env["BRAMA_RETRIES"] = "0"
		r := run(t, env, command)
		assert.Equal(t, 3, r.code, "%s: %s", command, r.stderr)
		assert.Contains(t, testkit.LastLine(r.stderr), "singularity: brama: request not sent: ", command)
	}
}
