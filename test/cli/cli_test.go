// Package cli_test runs the built singularity binary as an operator would:
// bad configurations must be refused with the documented one-line sentence
// and exit code, and no secret may appear in any output.
package cli_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const secretValue = "very-secret-hmac-value-42"

// world is a directory holding every file a valid configuration names,
// and the valid environment naming them.
type world struct {
	dir   string
	valid map[string]string
}

func newWorld(t *testing.T) world {
	t.Helper()
	dir := t.TempDir()
	return world{dir: dir, valid: testkit.ValidEnv(t, dir, secretValue)}
}

// env is a complete, valid environment for once/run/doctor, the test's
// own copy.
func (w world) env() map[string]string { return maps.Clone(w.valid) }

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runIn(t, "", env, args...)
}

func TestBadConfigurationsExit2(t *testing.T) {
	w := newWorld(t)
	group := filepath.Join(w.dir, "group.secret")
	require.NoError(t, os.WriteFile(group, []byte(secretValue), 0o600))
	require.NoError(t, os.Chmod(group, 0o640))
	cases := []struct {
		name  string
		set   map[string]string
		unset []string
		args  []string
		want  string
	}{
		{"missing agent id", nil, []string{"SINGULARITY_AGENT_ID"}, nil, "configuration: SINGULARITY_AGENT_ID is required"},
		{"empty agent id", map[string]string{"SINGULARITY_AGENT_ID": ""}, nil, nil, "configuration: SINGULARITY_AGENT_ID: agent id is not a valid immutable identifier"},
		{"missing policy sequence", nil, []string{"SINGULARITY_POLICY_SEQUENCE"}, nil, "configuration: SINGULARITY_POLICY_SEQUENCE is required"},
		{"missing manifest", nil, []string{"LAS_RELEASE_MANIFEST_FILE"}, nil, "configuration: LAS_RELEASE_MANIFEST_FILE is required"},
		{"bearer without key", map[string]string{"BRAMA_AUTH": "bearer", "BRAMA_MODEL": "gpt-x"}, nil, nil, "secret file: BRAMA_API_KEY_FILE is required when BRAMA_AUTH is bearer"},
		{"bearer with a selector", map[string]string{"BRAMA_AUTH": "bearer"}, nil, nil, "configuration: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
		{"keyless with a selector", map[string]string{"BRAMA_AUTH": "none", "BRAMA_MODEL": "task:code"}, nil, nil, "configuration: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
		{"unknown auth", map[string]string{"BRAMA_AUTH": "basic"}, nil, nil, "configuration: BRAMA_AUTH must be hmac, bearer or none"},
		{"max tokens field", map[string]string{"BRAMA_MAX_TOKENS_FIELD": "max_new_tokens"}, nil, nil, "configuration: BRAMA_MAX_TOKENS_FIELD must be max_tokens or max_completion_tokens"},
		{"retries", map[string]string{"BRAMA_RETRIES": "two"}, nil, nil, "configuration: BRAMA_RETRIES must be an unsigned integer"},
		{"prices file missing", map[string]string{"BRAMA_PRICES_FILE": "/nonexistent/prices.json"}, nil, nil, "configuration: BRAMA_PRICES_FILE: /nonexistent/prices.json: no such file or directory"},
		{"bad digest", map[string]string{"SINGULARITY_CODE_SHA256": "XYZ"}, nil, nil, "configuration: SINGULARITY_CODE_SHA256: code digest must be 64 lowercase hexadecimal characters"},
		{"negative price", map[string]string{"BRAMA_INPUT_PRICE_USD_PER_MILLION": "-1"}, nil, nil, "configuration: BRAMA_INPUT_PRICE_USD_PER_MILLION: prices and balance cannot be negative"},
		{"zero rounds flag", nil, nil, []string{"--max-tool-rounds=0"}, "configuration: --max-tool-rounds: max tool rounds must be positive"},
		{"temperature", map[string]string{"BRAMA_TEMPERATURE": "3"}, nil, nil, "configuration: BRAMA_TEMPERATURE: temperature must be finite and between zero and two"},
		{"brama scheme", map[string]string{"BRAMA_BASE_URL": "ws://x"}, nil, nil, "configuration: BRAMA_BASE_URL must use http or https"},
		{"entrypoint", map[string]string{"LAS_MCP_ENTRYPOINT": "/nonexistent/mcp.mjs"}, nil, nil, "configuration: LAS_MCP_ENTRYPOINT: LAS entrypoint not found: /nonexistent/mcp.mjs"},
		{"watermark", map[string]string{"LAS_RELEASE_WATERMARK_FILE": "rel"}, nil, nil, "configuration: LAS_RELEASE_WATERMARK_FILE: LAS release watermark must be an absolute path"},
		{"no secret", nil, []string{"BRAMA_HMAC_SECRET_FILE"}, nil, "secret file: BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required"},
		{"empty secret var is unset", map[string]string{"BRAMA_HMAC_SECRET_FILE": "", "WISENT_APP_AGENT_AUTH_SECRET": ""}, nil, nil, "secret file: BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required"},
		{"group readable secret", map[string]string{"BRAMA_HMAC_SECRET_FILE": group}, nil, nil, "secret file: " + group + " must not be group/world accessible"},
		{"debug not loopback", map[string]string{"SINGULARITY_DEBUG_ADDR": "0.0.0.0:1"}, nil, nil, "configuration: SINGULARITY_DEBUG_ADDR: debug address must be loopback"},
		{"unknown flag", nil, nil, []string{"--no-such-flag"}, "configuration: unknown flag --no-such-flag"},
	}
	for _, c := range cases {
		for _, command := range []string{"once", "run", "doctor"} {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				env := w.env()
				for _, k := range c.unset {
					delete(env, k)
				}
				for k, v := range c.set {
					env[k] = v
				}
				r := run(t, env, append([]string{command}, c.args...)...)
				assert.Equal(t, 2, r.code)
				assert.Equal(t, "singularity: "+c.want+"\n", r.stderr)
				assert.Empty(t, r.stdout)
				assert.NotContains(t, r.stdout+r.stderr, secretValue)
			})
		}
	}
}

// TestVersion: --version prints one line with the version and the VCS
// revision the toolchain stamped (or says it has none), and exits 0
// without any configuration.
func TestVersion(t *testing.T) {
	r := run(t, map[string]string{"PATH": os.Getenv("PATH")}, "--version")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^singularity \S+ \((revision [0-9a-f]{7,}(, modified)?(, \S+)?|revision unknown)\)\n$`, r.stdout)
	assert.Empty(t, r.stderr)
}

func TestSecretFromEnvironmentNeverPrinted(t *testing.T) {
	w := newWorld(t)
	env := w.env()
	delete(env, "BRAMA_HMAC_SECRET_FILE")
	env["WISENT_APP_AGENT_AUTH_SECRET"] = secretValue
	env["SINGULARITY_LOG_LEVEL"] = "debug"
	r := run(t, env, "once")
	assert.NotContains(t, r.stdout+r.stderr, secretValue)
	assert.NotEqual(t, 0, r.code)
	assert.NotEqual(t, 2, r.code, "a valid configuration must pass validation: %s", r.stderr)
}

func TestOnceHelpListsEveryVariable(t *testing.T) {
	r := run(t, map[string]string{"PATH": os.Getenv("PATH")}, "once", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	vars := []string{
		"SINGULARITY_AGENT_ID", "SINGULARITY_AGENT_NAME", "SINGULARITY_AGENT_TICKER", "SINGULARITY_AGENT_TYPE",
		"SINGULARITY_SPECIALTY", "SINGULARITY_ROLE", "SINGULARITY_ENVIRONMENT", "SINGULARITY_HOST",
		"SINGULARITY_WORKLOAD_ID", "SINGULARITY_WORKLOAD_PUBLIC_KEY", "SINGULARITY_EXECUTABLE_SHA256",
		"SINGULARITY_CODE_SHA256", "SINGULARITY_POLICY_SHA256", "SINGULARITY_POLICY_SEQUENCE",
		"SINGULARITY_STARTING_BALANCE_USD", "SINGULARITY_INSTANCE_USD_PER_HOUR", "BRAMA_INPUT_PRICE_USD_PER_MILLION",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION", "SINGULARITY_CYCLE_INTERVAL_SECS", "SINGULARITY_MAX_TOOL_ROUNDS",
		"SINGULARITY_STATE_DIR", "SINGULARITY_WORKSPACE", "SINGULARITY_RESUME", "SINGULARITY_STIMULUS",
		"SINGULARITY_HTTP_TIMEOUT_SECS", "SINGULARITY_MCP_TIMEOUT_SECS", "SINGULARITY_SHUTDOWN_GRACE_SECS",
		"SINGULARITY_DEBUG_ADDR", "SINGULARITY_CONTEXT_MESSAGES", "BRAMA_BASE_URL", "BRAMA_MODEL",
		"BRAMA_HMAC_SECRET_FILE", "WISENT_APP_AGENT_AUTH_SECRET", "BRAMA_MAX_TOKENS", "BRAMA_TEMPERATURE",
		"LAS_COMMAND", "LAS_MCP_ENTRYPOINT", "LAS_ONLY", "LAS_SKIP", "LAS_RELEASE_MANIFEST_FILE",
		"LAS_RELEASE_MANIFEST_SIGNATURE_FILE", "LAS_RELEASE_TRUST_STORE_FILE", "LAS_RELEASE_WATERMARK_FILE",
		"SINGULARITY_REQUIRED_SURFACES", "MOST_BASE_URL", "MOST_SERVICE_TOKEN_FILE", "SINGULARITY_LOG_LEVEL",
		"BRAMA_AUTH", "BRAMA_API_KEY_FILE", "BRAMA_MAX_TOKENS_FIELD", "BRAMA_RETRIES", "BRAMA_PRICES_FILE",
		"SINGULARITY_ALLOW_FREE_MODEL",
	}
	for _, v := range vars {
		assert.Contains(t, r.stdout, v)
	}
	for _, def := range []string{`"MyAgent"`, `"10"`, `".singularity"`, `"http://127.0.0.1:8081"`, `"0.2"`, `"2048"`, `skarbiec,finance for the classic Las, none with a servers file`} {
		assert.Contains(t, strings.Join(strings.Fields(r.stdout), " "), def)
	}
}

// lasFlags are the Las pins and command for `tools`, pointing at files in
// w's directory.
func (w world) lasFlags(command, entrypoint string) []string {
	return []string{
		"--las-command", command,
		"--las-mcp-entrypoint", entrypoint,
		"--las-release-manifest-file", w.valid["LAS_RELEASE_MANIFEST_FILE"],
		"--las-release-manifest-signature-file", w.valid["LAS_RELEASE_MANIFEST_SIGNATURE_FILE"],
		"--las-release-trust-store-file", w.valid["LAS_RELEASE_TRUST_STORE_FILE"],
		"--las-release-watermark-file", w.valid["LAS_RELEASE_WATERMARK_FILE"],
	}
}

var builtinTable = []string{
	"singularity_memory_remember\tPersist a memory owned by this digital being",
	"singularity_memory_recall\tRecall persistent memories containing a query",
	"singularity_self_set_prompt\tReplace this being's persistent system prompt",
	"singularity_self_add_rule\tAdd a persistent self-imposed rule",
	"singularity_self_add_learning\tRecord a persistent learning that changes future decisions",
	"singularity_self_switch_model\tSwitch future cognition calls to another available Brama model",
	"singularity_spawn_child\tCreate and start a child digital being with separate state",
	"singularity_file_read\tRead one UTF-8 file inside the configured workspace",
	"singularity_file_write\tAtomically create or replace one UTF-8 file inside the configured workspace",
}

func TestToolsTableWithExampleLas(t *testing.T) {
	w := newWorld(t)
	las := testkit.ExampleLas(t)
	args := append([]string{"tools", "--format", "table", "--agent-id", "agent-1"}, w.lasFlags(las, w.valid["LAS_MCP_ENTRYPOINT"])...)
	r := run(t, map[string]string{"PATH": os.Getenv("PATH")}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Greater(t, len(lines), len(builtinTable))
	assert.Equal(t, builtinTable, lines[len(lines)-len(builtinTable):], "built-ins come after the Las tools, in spec order")
	assert.Contains(t, lines, "finance__finance_sell_report\tSell units of an item in the simulated market and report the revenue earned")
	assert.NotContains(t, r.stdout, "most_health", "tools never lists the Most tools")
	assert.NotContains(t, r.stdout, "singularity_message_send", "the family tools are off by default")

	family := run(t, map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_FAMILY_TOOLS": "1"}, args...)
	require.Equal(t, 0, family.code, family.stderr)
	withFamily := strings.Split(strings.TrimRight(family.stdout, "\n"), "\n")
	assert.Equal(t, append(append([]string(nil), lines...),
		"singularity_message_send\tSend a message to this being's parent (to: \"parent\") or to one of its own children (to: its name or id); it reaches the receiver's next cycle exactly once",
		"singularity_self_sleep\tEnd this cycle and sleep: no model call until the seconds pass or, with wake_on_message (the default), a message or a fund arrives"),
		withFamily, "--family-tools adds the two family tools after the nine built-ins")

	r = run(t, map[string]string{"PATH": os.Getenv("PATH")}, append([]string{"tools", "--agent-id", "agent-1"}, w.lasFlags(las, w.valid["LAS_MCP_ENTRYPOINT"])...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var defs []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &defs))
	require.Len(t, defs, len(lines))
	for _, d := range defs {
		assert.Equal(t, "function", d.Type)
		assert.True(t, strings.HasPrefix(strings.TrimSpace(string(d.Function.Parameters)), "{"), d.Function.Name)
	}
}

func TestToolsSkarbiecNeedsAgentID(t *testing.T) {
	w := newWorld(t)
	las := testkit.ExampleLas(t)
	r := run(t, map[string]string{"PATH": os.Getenv("PATH")}, append([]string{"tools"}, w.lasFlags(las, w.valid["LAS_MCP_ENTRYPOINT"])...)...)
	assert.Equal(t, 3, r.code)
	assert.Equal(t, "singularity: mcp: Skarbiec requires an explicit immutable Las agent identity\n", testkit.LastLine(r.stderr))
	r = run(t, map[string]string{"PATH": os.Getenv("PATH")}, append([]string{"tools", "--agent-id", "bad id"}, w.lasFlags(las, w.valid["LAS_MCP_ENTRYPOINT"])...)...)
	assert.Equal(t, 3, r.code)
	assert.Equal(t, "singularity: mcp: invalid immutable Las agent identity\n", testkit.LastLine(r.stderr))
}

func TestToolsWithServerEverything(t *testing.T) {
	entry := testkit.ServerEverything(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	w := newWorld(t)
	env := map[string]string{"PATH": os.Getenv("PATH"), "LAS_ONLY": ""}
	r := run(t, env, append([]string{"tools", "--format", "table", "--agent-id", "agent-1"}, w.lasFlags(node, entry)...)...)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	var names []string
	for _, l := range lines {
		names = append(names, strings.SplitN(l, "\t", 2)[0])
	}
	assert.Contains(t, names, "echo")
	assert.Equal(t, builtinTable, lines[len(lines)-len(builtinTable):])
}
