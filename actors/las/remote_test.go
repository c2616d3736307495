package las

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/mcpremote"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/world/examplelas"
)

// remoteServer is a real MCP server on loopback built on the official Go
// SDK, behind a recorder: it sees every request as the server would, and
// drops the connection of a tools/call of "drop" after reading it (so the
// call was delivered, and its answer lost).
type remoteServer struct {
	*httptest.Server
	mu      sync.Mutex
	auth    []string
	agentID []string
	drops   int
	echoes  int
}

type echoIn struct {
	Message string `json:"message"`
}

type echoOut struct {
	Message string `json:"message"`
}

func startRemote(t testing.TB) *remoteServer {
	t.Helper()
	r := &remoteServer{}
	server := mcp.NewServer(&mcp.Implementation{Name: "remote-test", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo a message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			r.mu.Lock()
			r.echoes++
			r.mu.Unlock()
			return nil, echoOut{Message: in.Message}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "drop", Description: "Never answered: the connection drops"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			r.agentID = append(r.agentID, string(body))
		}
		drop := bytes.Contains(body, []byte(`"method":"tools/call"`)) && bytes.Contains(body, []byte(`"name":"drop"`))
		if drop {
			r.drops++
		}
		r.mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *remoteServer) counts() (drops, echoes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drops, r.echoes
}

// TestRemoteServer: a servers-file entry with a url is a remote MCP server
// over streamable HTTP: its headers go with every request, the agentId
// with initialize, its tools are listed and called under its name; a
// call whose connection drops is indeterminate and never replayed, and
// the server goes on serving after its session is restarted.
func TestRemoteServer(t *testing.T) {
	srv := startRemote(t)
	opts := Options{
		AgentID:      "agent-ada",
		Servers:      []Server{{Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer remote-key-1"}}},
		CallTimeout:  5 * time.Second,
		PingInterval: -1,
		PingTimeout:  time.Second,
		Supervision:  supervision.LasConfig{Backoff: fastBackoff},
		Logger:       quietLogger(),
	}
	h := startWith(t, opts, supervision.LasConfig{}, "")
	cat := h.catalog()
	require.True(t, cat.Available)
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Function.Name)
	}
	assert.ElementsMatch(t, []string{"remote__echo", "remote__drop"}, names)

	res := h.call("remote__echo", `{"message":"over http"}`, 5*time.Second)
	require.Equal(t, outcome.Success, res.Status, string(res.Content))
	assert.Contains(t, string(res.Content), "over http")

	dropped := h.call("remote__drop", `{}`, 5*time.Second)
	assert.Equal(t, outcome.Indeterminate, dropped.Status)
	assert.Equal(t, "mcp", dropped.ErrorCode)

	// The session restarts; the next call is served and the dropped one
	// was delivered once, never again.
	next[messages.LasRestarted](h, 10*time.Second)
	res = h.call("remote__echo", `{"message":"again"}`, 5*time.Second)
	require.Equal(t, outcome.Success, res.Status, string(res.Content))
	drops, echoes := srv.counts()
	assert.Equal(t, 1, drops)
	assert.Equal(t, 2, echoes)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, a := range srv.auth {
		assert.Equal(t, "Bearer remote-key-1", a)
	}
	require.NotEmpty(t, srv.agentID)
	for _, body := range srv.agentID {
		assert.Contains(t, body, `"agentId":"agent-ada"`)
		assert.Contains(t, body, `"protocolVersion":"2024-11-05"`)
	}
	assert.True(t, strings.Contains(h.describe().Status, "running"))
}

// BenchmarkServerCallRoundTrip is BenchmarkCallRoundTrip through the
// Group of a servers file: the example Las as server "x", called as
// "x__echo__echo".
func BenchmarkServerCallRoundTrip(b *testing.B) {
	opts := baseOptions(b, &examplelas.Config{})
	opts.Servers = []Server{{Name: "x", Command: opts.Command, Args: []string{opts.Entrypoint}}}
	opts.RequiredSurfaces = nil
	h := startWith(b, opts, supervision.LasConfig{}, "")
	h.catalog()
	req := messages.LasCallRequest{Tool: "x__echo__echo", Arguments: json.RawMessage(`{"message":"ping"}`)}
	b.ReportAllocs()
	for b.Loop() {
		req.Deadline = time.Now().Add(5 * time.Second)
		res, err := h.system.Root.RequestFuture(h.las, req, 10*time.Second).Result()
		if err != nil || res.(messages.LasCallResponse).Outcome.Status != outcome.Success {
			b.Fatalf("call: %v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkRemoteCallRoundTrip is a call of a remote server over
// streamable HTTP on loopback, through the Group and the SDK client.
func BenchmarkRemoteCallRoundTrip(b *testing.B) {
	srv := startRemote(b)
	opts := Options{Servers: []Server{{Name: "remote", URL: srv.URL}}, CallTimeout: 5 * time.Second, PingInterval: -1, Logger: quietLogger()}
	h := startWith(b, opts, supervision.LasConfig{}, "")
	h.catalog()
	req := messages.LasCallRequest{Tool: "remote__echo", Arguments: json.RawMessage(`{"message":"ping"}`)}
	b.ReportAllocs()
	for b.Loop() {
		req.Deadline = time.Now().Add(5 * time.Second)
		res, err := h.system.Root.RequestFuture(h.las, req, 10*time.Second).Result()
		if err != nil || res.(messages.LasCallResponse).Outcome.Status != outcome.Success {
			b.Fatalf("call: %v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// TestRemoteRedirectIsPermanent: a remote server that redirects to
// another origin is a configuration to fix, at the handshake and after
// it: a permanent failure, never restarted into the same redirect.
func TestRemoteRedirectIsPermanent(t *testing.T) {
	err := fmt.Errorf("%w: http://a:80 to http://b:80", mcpremote.ErrCrossOriginRedirect)
	tests := []struct {
		name string
		got  error
	}{
		{"initialize", initializeFailure(err, Options{CallTimeout: time.Second})},
		{"session", classify(err, func(s string) string { return s })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *fault.Error
			require.ErrorAs(t, tt.got, &f)
			assert.Equal(t, fault.Permanent, f.Kind, f.Error())
			assert.Contains(t, f.Error(), "redirect to another origin refused")
		})
	}
}
