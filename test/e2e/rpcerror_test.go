package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
)

// strictMessage is what the strict server answers every call with.
const strictMessage = "n must be a positive integer"

// strictServer is a remote MCP server (the official SDK's streamable HTTP
// handler) whose tool "strict" refuses every call with the JSON-RPC error
// -32602 (invalid params), as a server does that checks its arguments
// itself; sessions counts the initialize requests it received.
func strictServer(t *testing.T) (srv *httptest.Server, sessions *atomic.Int64) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "strict", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "strict", Description: "Refuses its arguments"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: strictMessage}
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	sessions = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			sessions.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, sessions
}

// TestRemoteJSONRPCErrorKeepsTheServer: a remote server answering tools/call
// with an ordinary JSON-RPC error object (-32602) is classified as the
// table of docs/las.md#calls-and-deadlines says, as a stdio server's
// answer is: indeterminate, error code mcp, the server's message shown
// to the model. The session is not restarted, so eight such answers in
// a row (more than the restart intensity allows) leave the server up and
// its tool in the catalogue.
func TestRemoteJSONRPCErrorKeepsTheServer(t *testing.T) {
	t.Parallel()
	srv, sessions := strictServer(t)
	w := newWorld(t, `{}`)
	w.useServer(t, "far", map[string]any{"url": srv.URL})
	const calls = 8
	var round []chat.ToolCall
	for i := range calls {
		round = append(round, bramatest.Call(fmt.Sprintf("call-%d", i), "far__strict", `{}`))
	}
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(100, 10), round...),
		bramatest.TextReply("Refused, all of them.", bramatest.Usage(100, 10)),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	want := `{"chat_id":null,"content":{"message":"Las answered with JSON-RPC error -32602: ` + strictMessage + `"},"error_code":"mcp","message_id":null,"status":"indeterminate"}`
	for i := range calls {
		assert.Equal(t, want, toolMessage(t, reqs[1].Body, fmt.Sprintf("call-%d", i)))
	}
	var names []string
	for _, tool := range reqs[1].Completion.Tools {
		names = append(names, tool.Function.Name)
	}
	assert.Contains(t, names, "far__strict", "the tool stays in the catalogue")
	assert.Equal(t, int64(1), sessions.Load(), "one session for every call")
	for _, e := range w.journal() {
		if e.Type == state.EventWarning {
			assert.NotContains(t, e.Message, "Las", "no restart, no unavailable server: %s", e.Message)
		}
	}
}
