package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/bramatest"
)

// mostServer is a real Most peer on loopback: it checks the bearer token
// and answers chat creation and messages with fixed ids.
type mostServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	auth   []string
}

func startMost(t *testing.T) *mostServer {
	m := &mostServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, r.Method+" "+r.URL.Path+" "+string(body))
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer most-e2e-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v3/chats":
			_, _ = io.WriteString(w, `{"id":"6f1c9d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f","message":{"id":"msg-1"}}`)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v3/chats/"):
			_, _ = io.WriteString(w, `{"id":"msg-2"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// TestOnceMostToolsRecordCreatedResources: with a Most token configured,
// the catalogue offers the three Most tools; a chat created and a message
// sent through them reach Most with the bearer token, their ids land in
// created_resources (once each), and the token appears nowhere the being
// writes or the model reads.
func TestOnceMostToolsRecordCreatedResources(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	most := startMost(t)
	token := filepath.Join(w.dir, "most.token")
	require.NoError(t, os.WriteFile(token, []byte("most-e2e-token\n"), 0o600))
	w.env["MOST_BASE_URL"] = most.URL
	w.env["MOST_SERVICE_TOKEN_FILE"] = token

	create := bramatest.Arguments(map[string]any{"from": "+15550000001", "to": []string{"+15550000002"}, "text": "hello"})
	send := bramatest.Arguments(map[string]any{"chat_id": "6f1c9d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f", "text": "again"})
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("c1", "most_create_chat", create)),
		bramatest.ToolCallsReply(bramatest.Usage(100, 10),
			bramatest.Call("c2", "most_send_message", send),
			bramatest.Call("c3", "most_send_message", send)),
		bramatest.TextReply("messages sent", bramatest.Usage(100, 5)),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	var names []string
	for _, tool := range w.brama.Completions()[0].Completion.Tools {
		names = append(names, tool.Function.Name)
	}
	assert.Equal(t, []string{"most_health", "most_create_chat", "most_send_message"}, names[len(names)-3:], "the Most tools come last")

	st := w.loadState()
	assert.Equal(t, []string{"6f1c9d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f"}, st.CreatedResources.ChatIDs)
	assert.Equal(t, []string{"msg-1", "msg-2"}, st.CreatedResources.MessageIDs, "ids are recorded once each")

	most.mu.Lock()
	require.Len(t, most.bodies, 3)
	for _, a := range most.auth {
		assert.Equal(t, "Bearer most-e2e-token", a)
	}
	assert.Contains(t, most.bodies[0], `"message":{"parts":[{"type":"text","value":"hello"}]}`)
	most.mu.Unlock()

	var envelope map[string]any
	require.NoError(t, json.Unmarshal([]byte(st.Conversation[2].Content), &envelope))
	assert.Equal(t, "success", envelope["status"])
	assert.Equal(t, "6f1c9d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f", envelope["chat_id"])
	assert.Equal(t, "msg-1", envelope["message_id"])

	for _, name := range []string{"state.json", "activity.jsonl"} {
		data, err := os.ReadFile(filepath.Join(w.stateDir, name))
		require.NoError(t, err)
		assert.NotContains(t, string(data), "most-e2e-token")
	}
	for _, req := range w.brama.Completions() {
		assert.NotContains(t, string(req.Body), "most-e2e-token")
	}
	assert.NotContains(t, r.stdout+r.stderr, "most-e2e-token")
}

// TestMostUnauthorizedEchoingTheToken: a Most that answers 401 with a
// body echoing the Authorization header: the token reaches neither
// stderr, nor the state, nor the journal, nor the model; it reads
// [redacted] (docs/tools.md#the-output-boundary).
func TestMostUnauthorizedEchoingTheToken(t *testing.T) {
	t.Parallel()
	const secret = "most-e2e-echoed-token-3c1d"
	w := newWorld(t, `{}`)
	echo := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(rw, `{"error":"bad credentials","got":"`+r.Header.Get("Authorization")+`"}`)
	}))
	t.Cleanup(echo.Close)
	token := filepath.Join(w.dir, "most.token")
	require.NoError(t, os.WriteFile(token, []byte(secret+"\n"), 0o600))
	w.env["MOST_BASE_URL"] = echo.URL
	w.env["MOST_SERVICE_TOKEN_FILE"] = token
	w.env["SINGULARITY_LOG_LEVEL"] = "debug"
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("h", "most_health", `{}`)),
		bramatest.TextReply("done", bramatest.Usage(100, 5)),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, secret)
	assert.NotContains(t, r.stdout, secret)
	for _, name := range []string{"state.json", "activity.jsonl", "conversation.jsonl"} {
		b, err := os.ReadFile(filepath.Join(w.stateDir, name))
		if err == nil {
			assert.NotContains(t, string(b), secret, name)
		}
	}
	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	var seen string
	for _, m := range reqs[1].Completion.Messages {
		if m.ToolCallID == "h" {
			seen = m.Content
		}
	}
	assert.Contains(t, seen, "Bearer [redacted]")
	assert.NotContains(t, seen, secret)
	for _, req := range w.brama.Requests() {
		assert.NotContains(t, string(req.Body), secret)
	}
}
