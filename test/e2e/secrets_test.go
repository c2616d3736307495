package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// bearerWorld is a gateway world (newGatewayWorld) whose bearer key is
// key instead of apiKeyValue.
func bearerWorld(t *testing.T, key string) *world {
	t.Helper()
	w := newGatewayWorld(t, "bearer", "gpt-small")
	w.brama = bramatest.Start(t, bramatest.Config{Auth: "bearer", Models: []string{"gpt-small"}, APIKey: []byte(key)})
	w.env["BRAMA_BASE_URL"] = w.brama.URL
	require.NoError(t, os.WriteFile(w.env["BRAMA_API_KEY_FILE"], []byte(key+"\n"), 0o600))
	return w
}

// TestEchoedKeyJSONEscaped: a gateway that refuses a completion with 400
// and echoes the bearer key JSON-escaped in its error message (`\/` for
// "/", \u0026 for "&") has the key redacted, in every form, from stderr,
// the journal files, `singularity journal` and state.json
// (docs/configuration.md#secret-files).
func TestEchoedKeyJSONEscaped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key string
		escaped   string // the key as the gateway writes it
	}{
		{"slash", "sk-e2e/echoed/key-4b7e", `sk-e2e\/echoed\/key-4b7e`},
		{"html", "sk-e2e&key<echoed>-8c1d", `sk-e2e\u0026key\u003cechoed\u003e-8c1d`},
		{"html upper hex", "sk-e2e&key<echoed>-8c1d", `sk-e2e\u0026key\u003Cechoed\u003E-8c1d`},
		{"quote and backslash", `sk-e2e"key\echoed-2a9f`, `sk-e2e\"key\\echoed-2a9f`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := bearerWorld(t, tt.key)
			body := `{"error":{"message":"Incorrect API key provided: ` + tt.escaped + `"}}`
			w.brama.Enqueue(bramatest.Reply{Status: 400, Body: []byte(body)})
			r := w.run("once")
			require.NotEqual(t, 0, r.code, "a refused completion fails the cycle")
			require.Len(t, w.brama.Completions(), 1, "the refusal was received")
			assert.Contains(t, r.stderr, "Incorrect API key provided: [redacted]")
			j := w.run("journal", "--format", "json")
			outputs := []string{r.stdout, r.stderr, j.stdout, j.stderr}
			for _, form := range []string{tt.key, tt.escaped} {
				assertNowhere(t, w, form, outputs)
			}
		})
	}
}

// TestWorkspaceFileHoldingBearerKey: the bearer key is a secret like the
// others, so a workspace file that holds it reaches the model through
// singularity_file_read as "[redacted]" (docs/tools.md#the-output-boundary).
func TestWorkspaceFileHoldingBearerKey(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-small")
	require.NoError(t, os.WriteFile(filepath.Join(w.env["SINGULARITY_WORKSPACE"], "notes.txt"), []byte("key: "+apiKeyValue+"\n"), 0o600))
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("call-read", "singularity_file_read", `{"path":"notes.txt"}`)),
		bramatest.TextReply("Read.", bramatest.Usage(100, 10)),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	assert.Contains(t, toolMessage(t, reqs[1].Body, "call-read"), "key: [redacted]")
	for _, req := range reqs {
		assert.NotContains(t, string(req.Body), apiKeyValue)
	}
	assertNowhere(t, w, apiKeyValue, []string{r.stdout, r.stderr})
}

// TestServersFileInlineEnvSecret: an inline env value of a servers file
// is a secret when its name breaks the forbidden-key rule or it is at
// least eight bytes long (docs/las.md#several-mcp-servers). A server that
// reports its environment to the model has those values redacted from
// the tool result, the requests to Brama, stderr, the journal and the
// state, while a short value under another name is shown as is.
func TestServersFileInlineEnvSecret(t *testing.T) {
	t.Parallel()
	const (
		apiKey  = "inline-api-key-3e8b1"
		shortKy = "k7"              // short, but its name is key-like
		long    = "long-value-9d0c" // any name, but long
	)
	w := newWorld(t, `{}`)
	w.useServer(t, "lab", map[string]any{
		"command": w.lasBin,
		"env": map[string]string{
			"API_KEY":      apiKey,
			"GITHUB_TOKEN": shortKy,
			"REGION_NOTE":  long,
			"VERBOSE":      "1",
		},
	})
	r, msg := w.callOnce(t, "call-env", "lab__chaos__env")
	for _, want := range []string{"API_KEY=[redacted]", "GITHUB_TOKEN=[redacted]", "REGION_NOTE=[redacted]", "VERBOSE=1"} {
		assert.Contains(t, msg, want)
	}
	j := w.run("journal")
	outputs := []string{r.stdout, r.stderr, j.stdout, j.stderr}
	for _, secret := range []string{apiKey, "GITHUB_TOKEN=" + shortKy, long} {
		for _, req := range w.brama.Requests() {
			assert.NotContains(t, string(req.Body), secret, "request to Brama")
		}
		assertNowhere(t, w, secret, outputs)
	}
}

// useServer makes server, as a servers file entry, w's only MCP server
// under name (its surface, required), with debug logs.
func (w *world) useServer(t *testing.T, name string, server map[string]any) {
	t.Helper()
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{name: server}})
	require.NoError(t, err)
	path := filepath.Join(w.dir, "servers.json")
	require.NoError(t, os.WriteFile(path, servers, 0o600))
	w.env["LAS_SERVERS_FILE"] = path
	w.env["SINGULARITY_REQUIRED_SURFACES"] = name
	w.env["SINGULARITY_LOG_LEVEL"] = "debug"
}

// callOnce runs `once` with a model that calls tool (call id) with no
// arguments, then ends the cycle; it returns the run and the tool message
// the model was sent.
func (w *world) callOnce(t *testing.T, id, tool string) (result, string) {
	t.Helper()
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call(id, tool, `{}`)),
		bramatest.TextReply("Seen.", bramatest.Usage(100, 10)),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	return r, toolMessage(t, reqs[1].Body, id)
}

// toolMessage is the content of the tool message answering call id in a
// completion request body.
func toolMessage(t *testing.T, body []byte, id string) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				return s
			}
			return string(m.Content)
		}
	}
	t.Fatalf("no tool message answers %s", id)
	return ""
}

// TestInlineEnvSecretInLiveOutputs: while `run` lives with a servers-file
// secret that its Las echoed to the model, no output of the live family
// shows it: the debug tree (JSON and text), the page, the being's journal
// tail, the metrics, and `status` read at the same time.
func TestInlineEnvSecretInLiveOutputs(t *testing.T) {
	t.Parallel()
	const apiKey = "inline-api-key-live-77c2a"
	w := newWorld(t, `{}`)
	w.useServer(t, "lab", map[string]any{"command": w.lasBin, "env": map[string]string{"API_KEY": apiKey}})
	w.env["SINGULARITY_DEBUG_ADDR"] = "127.0.0.1:0"
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("call-env", "lab__chaos__env", `{}`))
	})
	p := w.start("run")
	base := p.debugBase(t)
	w.waitJournal(waitLimit, "the env tool answered", func(events []state.Event) bool {
		return testkit.Count(events, state.EventToolFinished) >= 2
	})
	outputs := debugBodies(t, base, "/debug/actors", "/debug/actors?format=text", "/debug/", "/debug/beings/"+w.loadState().Identity.AgentID+"/journal", "/metrics")
	assert.Contains(t, outputs[3], "API_KEY=[redacted]", "the journal tail shows the tool's answer, redacted")
	st := w.run("status", "--format", "json")
	outputs = append(outputs, st.stdout, st.stderr)
	p.signal(os.Interrupt)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	outputs = append(outputs, r.stdout, r.stderr)
	for _, req := range w.brama.Requests() {
		assert.NotContains(t, string(req.Body), apiKey, "request to Brama")
	}
	assertNowhere(t, w, apiKey, outputs)
}

// debugBase waits for p's debug endpoint and returns its base URL.
func (p *process) debugBase(t *testing.T) string {
	t.Helper()
	p.stderr.waitFor(t, "debug endpoint listening", waitLimit)
	base := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/debug/`).FindStringSubmatch(p.stderr.String())
	require.Len(t, base, 2, p.stderr.String())
	return base[1]
}

// debugBodies GETs each route of the debug endpoint at base, which must
// answer 200, and returns the bodies in order.
func debugBodies(t *testing.T, base string, routes ...string) []string {
	t.Helper()
	var bodies []string
	for _, route := range routes {
		res, err := http.Get(base + route)
		require.NoError(t, err, route)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err, route)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", route, body)
		bodies = append(bodies, string(body))
	}
	return bodies
}
