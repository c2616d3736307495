package mcpremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wisent/singularity/internal/tools/outcome"
)

// newMCPHandler is a real MCP server of the official SDK with one tool,
// "echo".
func newMCPHandler() http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote-test", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo a message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Message string }) (*mcp.CallToolResult, struct{ Message string }, error) {
			return nil, in, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
}

// recorder counts the requests that reach h and the Authorization
// headers among them.
type recorder struct {
	h    http.Handler
	mu   sync.Mutex
	reqs int
	auth []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs++
	if a := req.Header.Get("Authorization"); a != "" {
		r.auth = append(r.auth, a)
	}
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func (r *recorder) seen() (reqs int, auth []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs, append([]string(nil), r.auth...)
}

func newSession(url string, maxReply int) *Session {
	return New(Config{
		URL:           url,
		Headers:       map[string]string{"Authorization": "Bearer secret-token", "X-Api-Key": "key"},
		ClientVersion: "test",
		AgentID:       "agent-ada",
		Timeout:       10 * time.Second,
		MaxReplyBytes: maxReply,
	})
}

// TestRedirect: a redirect within the configured origin is followed with
// the headers; a redirect to another origin is refused before any request
// reaches it, and ends the session with ErrCrossOriginRedirect.
func TestRedirect(t *testing.T) {
	other := &recorder{h: newMCPHandler()}
	otherServer := httptest.NewServer(other)
	defer otherServer.Close()

	same := &recorder{h: newMCPHandler()}
	mux := http.NewServeMux()
	mux.Handle("/mcp", same)
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherServer.URL+"/mcp", http.StatusTemporaryRedirect)
	})
	first := httptest.NewServer(mux)
	defer first.Close()

	tests := []struct {
		name    string
		path    string
		target  *recorder
		wantErr error
	}{
		{"same origin", "/same", same, nil},
		{"another origin", "/other", other, ErrCrossOriginRedirect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(first.URL+tt.path, 0)
			defer s.Close(errors.New("test over"))
			err := s.Initialize(context.Background())()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Initialize() = %v, want %v", err, tt.wantErr)
			}
			reqs, auth := tt.target.seen()
			if tt.wantErr == nil {
				if reqs == 0 || len(auth) != reqs {
					t.Errorf("target saw %d requests, %d with Authorization; want all of them with it", reqs, len(auth))
				}
				return
			}
			if reqs != 0 || len(auth) != 0 {
				t.Errorf("another origin saw %d requests, Authorization %q; want none", reqs, auth)
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("session still up after a refused redirect")
			}
			if !errors.Is(s.Err(), ErrCrossOriginRedirect) {
				t.Errorf("Err() = %v, want ErrCrossOriginRedirect", s.Err())
			}
		})
	}
}

// hugeReply answers a tools/call itself with a reply that never ends
// within size bytes, as JSON or as an event stream, and reports how many
// bytes it could write before the client hung up; every other request
// goes to a real MCP server.
type hugeReply struct {
	mcp     http.Handler
	sse     bool
	size    int
	written chan int
}

func (h *hugeReply) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.mcp.ServeHTTP(w, r)
		return
	}
	head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"`
	if h.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		head = "event: message\ndata: " + head
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	n, _ := io.WriteString(w, head)
	chunk := []byte(strings.Repeat("a", 64<<10))
	for n < h.size {
		k, err := w.Write(chunk)
		n += k
		if err != nil {
			break
		}
	}
	h.written <- n
}

// TestReplyCap: a tools/call answered with a reply past MaxReplyBytes,
// as JSON or as one event, is indeterminate and ends the session, and the
// client stops reading soon after the cap: the server cannot write much
// more than the cap and the sockets' buffers.
func TestReplyCap(t *testing.T) {
	const (
		maxReply = 1 << 20
		size     = 96 << 20
		bound    = 24 << 20 // the cap, the slack and the kernel's buffers
	)
	for _, sse := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "event stream"}[sse]
		t.Run(name, func(t *testing.T) {
			h := &hugeReply{mcp: newMCPHandler(), sse: sse, size: size, written: make(chan int, 1)}
			server := httptest.NewServer(h)
			defer server.Close()
			s := newSession(server.URL, maxReply)
			defer s.Close(errors.New("test over"))
			if err := s.Initialize(context.Background())(); err != nil {
				t.Fatalf("Initialize() = %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			o, err := s.CallTool(ctx, "echo", json.RawMessage(`{"Message":"hi"}`))()
			if err != nil {
				t.Fatalf("CallTool() error = %v", err)
			}
			if o.Status != outcome.Indeterminate || !strings.Contains(string(o.Content), "1048576 bytes") {
				t.Errorf("outcome = %s %s, want indeterminate past 1048576 bytes", o.Status, o.Content)
			}
			if !errors.Is(s.Err(), ErrBroken) {
				t.Errorf("Err() = %v, want ErrBroken", s.Err())
			}
			if n := <-h.written; n > bound {
				t.Errorf("server wrote %d bytes before the client hung up, want at most %d", n, bound)
			}
		})
	}
}

// TestCappedBody: a body fails past its cap, counted in all for a JSON
// answer and per event for an event stream, whatever its line ends.
func TestCappedBody(t *testing.T) {
	event := func(end string) string { return "event: message" + end + "data: 0123456789" + end + end }
	tests := []struct {
		name    string
		body    string
		events  bool
		tooLong bool
	}{
		{"json within", strings.Repeat("x", 64), false, false},
		{"json past", strings.Repeat("x", 65), false, true},
		{"events LF", strings.Repeat(event("\n"), 20), true, false},
		{"events CRLF", strings.Repeat(event("\r\n"), 20), true, false},
		{"events CR", strings.Repeat(event("\r"), 20), true, false},
		{"one long event", "data: " + strings.Repeat("x", 64) + "\n\n", true, true},
		{"long event of short lines", strings.Repeat("data: x\r\n", 10) + "\r\n", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCappedBody(io.NopCloser(strings.NewReader(tt.body)), 64, tt.events)
			got, err := io.ReadAll(b)
			if tt.tooLong {
				if !errors.Is(err, ErrReplyTooLarge) {
					t.Fatalf("ReadAll() error = %v, want ErrReplyTooLarge", err)
				}
				if _, err := b.Read(make([]byte, 1)); !errors.Is(err, ErrReplyTooLarge) {
					t.Errorf("Read after the cap = %v, want ErrReplyTooLarge again", err)
				}
				return
			}
			if err != nil || string(got) != tt.body {
				t.Errorf("ReadAll() = %q, %v; want the body whole", got, err)
			}
		})
	}
}

// TestErrorObjectKeepsTheSession: a tools/call answered with a JSON-RPC
// error object (the official SDK's server passes a tool's *jsonrpc.Error
// on) is indeterminate with error code mcp and the server's message,
// redacted, as from a stdio server; the session stays up and the next
// call goes through it.
func TestErrorObjectKeepsTheSession(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "strict", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "strict", Description: "Refuses its arguments"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "n must be positive, not secret-token"}
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo a message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Message string }) (*mcp.CallToolResult, struct{ Message string }, error) {
			return nil, in, nil
		})
	rec := &recorder{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	s := newSession(srv.URL, 0)
	s.cfg.Redact = func(text string) string { return strings.ReplaceAll(text, "secret-token", "[redacted]") }
	defer s.Close(errors.New("test over"))
	if err := s.Initialize(context.Background())(); err != nil {
		t.Fatalf("Initialize() = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tests := []struct {
		tool, args  string
		wantStatus  string
		wantContent string
	}{
		{"strict", `{}`, outcome.Indeterminate, `{"message":"Las answered with JSON-RPC error -32602: n must be positive, not [redacted]"}`},
		{"strict", `{}`, outcome.Indeterminate, `{"message":"Las answered with JSON-RPC error -32602: n must be positive, not [redacted]"}`},
		{"echo", `{"Message":"still here"}`, outcome.Success, ""},
	}
	for _, tt := range tests {
		o, err := s.CallTool(ctx, tt.tool, json.RawMessage(tt.args))()
		if err != nil {
			t.Fatalf("CallTool(%s) error = %v", tt.tool, err)
		}
		if o.Status != tt.wantStatus || (tt.wantContent != "" && string(o.Content) != tt.wantContent) {
			t.Errorf("CallTool(%s) = %s %s, want %s %s", tt.tool, o.Status, o.Content, tt.wantStatus, tt.wantContent)
		}
		if o.Status == outcome.Indeterminate && o.ErrorCode != "mcp" {
			t.Errorf("CallTool(%s) error code = %q, want mcp", tt.tool, o.ErrorCode)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("session ended after %s: %v", tt.tool, err)
		}
	}
}

// TestErrorObject: only an error object a server answered with, the
// direct cause of the SDK's "calling" error, is an answer; the SDK's own
// transport failures wrap an error object of theirs deeper down.
func TestErrorObject(t *testing.T) {
	answer := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "n must be positive"}
	rejected := &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}
	tests := []struct {
		name string
		err  error
		want *jsonrpc.Error
	}{
		{"an answer", fmt.Errorf("calling %q: %w", "tools/call", answer), answer},
		{"a transport failure", fmt.Errorf("calling %q: %w", "tools/call", fmt.Errorf("POST: %w: %w", rejected, io.ErrUnexpectedEOF)), nil},
		{"a plain failure", fmt.Errorf("calling %q: %w", "tools/call", io.EOF), nil},
		{"a bare error object", answer, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := errorObject(tt.err)
			if ok != (tt.want != nil) || got != tt.want {
				t.Errorf("errorObject() = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}
