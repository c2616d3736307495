package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// A secret reaches the runtime from every side: a server's answer, its
// tool list, the model's own reply. These tests run the binary against a
// test gateway and real MCP servers and look for the secret, in each
// covered form, in everything the runtime wrote or showed
// (docs/configuration.md#secret-files).

// headerServer is a remote MCP server (the official SDK's streamable
// HTTP handler) that requires the bearer header "Bearer <token>". Its
// tool "whoami" answers with the token alone, as the request carried
// it; its tool "about" describes itself with description.
func headerServer(t *testing.T, token, description string) *httptest.Server {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Say whom the request was sent for"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			got := strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + got}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "about", Description: description},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// withHeaderServer points w's servers file at srv as server "far", its
// Authorization header read from a secret file holding "Bearer <token>".
func withHeaderServer(t *testing.T, w *world, srv *httptest.Server, token string) {
	t.Helper()
	keyFile := filepath.Join(w.dir, "far.header")
	require.NoError(t, os.WriteFile(keyFile, []byte("Bearer "+token+"\n"), 0o600))
	w.useServer(t, "far", map[string]any{
		"url":     srv.URL,
		"headers": map[string]any{"Authorization": map[string]string{"file": keyFile}},
	})
}

// assertNowhereAll is assertNowhere for each text, the requests to the
// gateway and the workspace's files included.
func assertNowhereAll(t *testing.T, w *world, texts []string, outputs []string) {
	t.Helper()
	var files []string
	require.NoError(t, filepath.Walk(w.env["SINGULARITY_WORKSPACE"], func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files = append(files, string(data))
		return err
	}))
	for _, req := range w.brama.Requests() {
		files = append(files, string(req.Body))
	}
	for _, text := range texts {
		assertNowhere(t, w, text, append(files, outputs...))
	}
}

// TestHeaderBearerCredentialAlone: a header secret file holding
// "Bearer <token>" protects the token alone too. The remote server
// echoes the token without its scheme; the model, the journal, the
// state, stderr and `journal` see "[redacted]".
func TestHeaderBearerCredentialAlone(t *testing.T) {
	t.Parallel()
	const token = "far-token-7c1e9a02b4"
	w := newWorld(t, `{}`)
	withHeaderServer(t, w, headerServer(t, token, "Describe nothing"), token)
	r, msg := w.callOnce(t, "call-who", "far__whoami")
	assert.Contains(t, msg, "you are [redacted]")
	j := w.run("journal")
	assertNowhereAll(t, w, []string{token}, []string{r.stdout, r.stderr, j.stdout, j.stderr})
}

// TestServerSecretInToolDescriptions: a server that puts its header
// secret into a tool's description has it redacted from the catalogue:
// the tools sent to the provider with every completion and the output
// of `singularity tools`.
func TestServerSecretInToolDescriptions(t *testing.T) {
	t.Parallel()
	const token = "far-token-desc-5d20e8f1"
	w := newWorld(t, `{}`)
	withHeaderServer(t, w, headerServer(t, token, "Calls home with Bearer "+token+" as its key"), token)
	w.brama.Enqueue(bramatest.TextReply("Nothing to do.", bramatest.Usage(100, 10)))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := w.brama.Completions()
	require.Len(t, reqs, 1)
	assert.Contains(t, string(reqs[0].Body), "Calls home with [redacted] as its key", "the description reaches the model, redacted")
	tools := w.run("tools", "--format", "table")
	require.Equal(t, 0, tools.code, tools.stderr)
	assert.Contains(t, tools.stdout, "far__about\tCalls home with [redacted] as its key")
	toolsJSON := w.run("tools")
	require.Equal(t, 0, toolsJSON.code, toolsJSON.stderr)
	assertNowhereAll(t, w, []string{token}, []string{r.stdout, r.stderr, tools.stdout, tools.stderr, toolsJSON.stdout, toolsJSON.stderr})
}

// echoingGateway makes w's gateway a model that echoes text: the first
// completion of each cycle writes it to a workspace file, remembers it
// and adds it as a learning; the second ends the cycle saying it.
func echoingGateway(w *world, text string) {
	args := func(v map[string]string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var n atomic.Int64
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		if n.Add(1)%2 == 1 {
			return bramatest.ToolCallsReply(bramatest.Usage(100, 10),
				bramatest.Call("call-write", "singularity_file_write", args(map[string]string{"path": "leak.txt", "content": "the key: " + text})),
				bramatest.Call("call-remember", "singularity_memory_remember", args(map[string]string{"kind": "fact", "text": "the key is " + text})),
				bramatest.Call("call-learn", "singularity_self_add_learning", args(map[string]string{"text": "keep " + text})),
			)
		}
		return bramatest.TextReply("Done; the key was "+text, bramatest.Usage(100, 10))
	})
}

// TestModelEchoedKeyRedactedEverywhere: a gateway that echoes the bearer
// key in its replies and in tool arguments puts it nowhere: not in the
// journal, state.json (conversation and memories), the log, `journal`,
// `status`, the debug endpoint's tree and journal view, the workspace
// file the model wrote, or the later requests to the gateway.
func TestModelEchoedKeyRedactedEverywhere(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-small")
	w.env["SINGULARITY_DEBUG_ADDR"] = "127.0.0.1:0"
	echoingGateway(w, apiKeyValue)
	p := w.start("run")
	base := p.debugBase(t)
	w.waitJournal(waitLimit, "two cycles ended", func(events []state.Event) bool {
		return testkit.Count(events, state.EventToolFinished) >= 6 && testkit.Count(events, state.EventModelCompleted) >= 4
	})
	journal := "/debug/beings/" + w.loadState().Identity.AgentID + "/journal"
	outputs := debugBodies(t, base, "/debug/actors", "/debug/actors?format=text", "/debug/", journal, journal+"?format=html")
	assert.Contains(t, outputs[3], "[redacted]", "the journal view shows the echo, redacted")
	st := w.run("status", "--format", "json")
	p.signal(os.Interrupt)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	j := w.run("journal")
	jj := w.run("journal", "--format", "json")
	outputs = append(outputs, st.stdout, st.stderr, r.stdout, r.stderr, j.stdout, j.stderr, jj.stdout, jj.stderr)

	leak, err := os.ReadFile(filepath.Join(w.env["SINGULARITY_WORKSPACE"], "leak.txt"))
	require.NoError(t, err, "the model's file was written")
	assert.Equal(t, "the key: [redacted]", string(leak))
	mind := w.loadState().Mind
	require.NotEmpty(t, mind.Memories)
	assert.Equal(t, "the key is [redacted]", mind.Memories[0].Text)
	assertNowhereAll(t, w, []string{apiKeyValue}, outputs)
}

// encodedKey is a bearer key with characters that every covered encoding
// changes.
const encodedKey = "sk-e2e/enc+key&x=1?é-44b1"

// TestModelEchoedKeyInEncodedForms: the key echoed by the model
// percent-encoded, in base64 or base64url, or JSON-escaped inside JSON
// text that is itself inside a JSON string, is redacted like the key as
// written, from the journal, the state, the log, `journal`, the
// workspace file and the later requests.
func TestModelEchoedKeyInEncodedForms(t *testing.T) {
	t.Parallel()
	nested, err := json.Marshal(map[string]string{"key": encodedKey})
	require.NoError(t, err)
	escapedOnce, err := json.Marshal(string(nested))
	require.NoError(t, err)
	tests := []struct{ name, form string }{
		{"query escaping", url.QueryEscape(encodedKey)},
		{"path escaping", url.PathEscape(encodedKey)},
		{"lower-case percent", strings.ToLower(url.QueryEscape(encodedKey))},
		{"base64", base64.StdEncoding.EncodeToString([]byte(encodedKey))},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte(encodedKey))},
		{"JSON in a JSON string", strings.ReplaceAll(string(escapedOnce[1:len(escapedOnce)-1]), "/", `\/`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := bearerWorld(t, encodedKey)
			echoingGateway(w, tt.form)
			r := w.run("once")
			require.Equal(t, 0, r.code, r.stderr)
			require.Len(t, w.brama.Completions(), 2)
			j := w.run("journal")
			jj := w.run("journal", "--format", "json")
			assertNowhereAll(t, w, []string{tt.form, encodedKey}, []string{r.stdout, r.stderr, j.stdout, j.stderr, jj.stdout, jj.stderr})
		})
	}
}
