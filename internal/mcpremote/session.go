// Package mcpremote is the MCP client of a remote server over the
// streamable HTTP transport, on the official MCP Go SDK
// (docs/las.md#several-mcp-servers): protocol 2024-11-05 asked for and
// checked, the configured headers on every request, the being's agentId
// added to initialize.
//
// The headers never leave the configured origin: a redirect to another
// scheme, host or port is refused and ends the session
// (ErrCrossOriginRedirect); a redirect within the origin is followed. A
// reply is read up to Config.MaxReplyBytes and no further: a longer one
// fails the connection without being held in memory.
//
// The transport never reconnects by itself, so that no call is ever sent
// twice: a call whose connection drops is answered indeterminate and
// ends the session (ErrBroken); the caller starts a new one for the calls
// after it.
package mcpremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
)

// Config says where the server is and how to talk to it.
type Config struct {
	// URL is the server's endpoint, http or https.
	URL string
	// Headers go with every request.
	Headers map[string]string
	// ClientVersion and AgentID go into initialize.
	ClientVersion string
	AgentID       string
	// Timeout bounds Initialize and ListTools (all of its pages).
	Timeout time.Duration
	// Redact, when set, is applied to the transport's error texts in the
	// outcomes of calls (a server's answer may hold a secret header).
	Redact func(string) string
	// ListChanged, when set, is called for each
	// notifications/tools/list_changed; it must not block.
	ListChanged func()
	// MaxReplyBytes bounds one reply from the server: the body of a JSON
	// answer, or one event of an event stream. Zero means
	// mcpwire.MaxLineBytes, the bound of a line from a stdio server.
	MaxReplyBytes int
}

// ErrBroken ends a session whose connection failed during a call.
var ErrBroken = errors.New("connection failed")

// ErrCrossOriginRedirect ends a session whose server redirected a request
// to another origin (scheme, host and port): the configured headers
// would have gone with it.
var ErrCrossOriginRedirect = errors.New("redirect to another origin refused")

// ErrReplyTooLarge is the read error of a reply longer than
// Config.MaxReplyBytes.
var ErrReplyTooLarge = errors.New("reply too large")

// sseSlack is what an event stream may run past MaxReplyBytes within one
// event before its body fails: the SDK's own bound on an event is
// MaxReplyBytes, and it reads ahead of what it has counted.
const sseSlack = 64 << 10

// Session is one MCP session with one remote server. Its methods are
// safe for concurrent use.
type Session struct {
	cfg    Config
	client *mcp.Client

	mu      sync.Mutex
	session *mcp.ClientSession

	end  sync.Once
	err  error
	done chan struct{}
}

// New returns a session that is not connected yet; Initialize connects.
func New(cfg Config) *Session {
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = mcpwire.MaxLineBytes
	}
	s := &Session{cfg: cfg, done: make(chan struct{})}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "singularity", Version: cfg.ClientVersion}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if cfg.ListChanged != nil {
				cfg.ListChanged()
			}
		},
	})
	return s
}

// PID is 0: a remote server is no process of ours.
func (s *Session) PID() int { return 0 }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is up, and why it ended once Done is
// closed.
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

func (s *Session) fail(err error) {
	s.end.Do(func() {
		s.err = err
		close(s.done)
	})
}

// Close ends the session with cause and closes the connection.
func (s *Session) Close(cause error) {
	s.fail(cause)
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	if session != nil {
		_ = session.Close()
	}
}

// Kill is Close: there is no process to kill.
func (s *Session) Kill(cause error) { s.Close(cause) }

// The requests below run on goroutines of their own, and each method
// returns a function that waits for the answer; that function must be
// called, once. (Over HTTP, requests made one after the other may reach
// the server in either order.)

// Initialize connects and runs the handshake within Config.Timeout.
// Another protocol version is mcpwire.ErrUnsupportedVersion, no answer
// in time context.DeadlineExceeded.
func (s *Session) Initialize(ctx context.Context) (wait func() error) {
	return async(func() error { return s.initialize(ctx) })
}

func (s *Session) initialize(ctx context.Context) error {
	endpoint, err := url.Parse(s.cfg.URL)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	client := &http.Client{
		Transport: &headers{
			origin:   origin(endpoint),
			headers:  s.cfg.Headers,
			agentID:  s.cfg.AgentID,
			maxReply: int64(s.cfg.MaxReplyBytes),
			next:     http.DefaultTransport,
		},
		// A redirect to another origin would take the headers with it
		// (the transport sets them on every request): it ends the
		// session before anything is sent there.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if from, to := origin(endpoint), origin(req.URL); from != to {
				err := fmt.Errorf("%w: %s to %s", ErrCrossOriginRedirect, from, to)
				s.fail(err)
				return err
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:     s.cfg.URL,
		HTTPClient:   client,
		MaxRetries:   -1, // a dropped connection is never retried: no call is replayed
		MaxEventSize: s.cfg.MaxReplyBytes,
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, unbind := s.bind(c)
	defer unbind()
	session, err := s.client.Connect(c, transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.ProtocolVersion})
	if err != nil {
		if ended := s.Err(); ended != nil {
			return ended
		}
		if errors.Is(c.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("initialize: %w", context.DeadlineExceeded)
		}
		return fmt.Errorf("initialize: %w", err)
	}
	if v := session.InitializeResult().ProtocolVersion; v != mcpwire.ProtocolVersion {
		_ = session.Close()
		return fmt.Errorf("%w: %q", mcpwire.ErrUnsupportedVersion, v)
	}
	s.mu.Lock()
	s.session = session
	s.mu.Unlock()
	if err := s.Err(); err != nil { // closed meanwhile
		_ = session.Close()
		return err
	}
	return nil
}

// bind returns ctx, also cancelled when the session ends, so that no
// request outlives it.
func (s *Session) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-c.Done():
		}
	}()
	return c, cancel
}

func (s *Session) connected() (*mcp.ClientSession, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil, errors.New("not connected")
	}
	return s.session, nil
}

// ListTools reads every page of tools/list within Config.Timeout.
func (s *Session) ListTools(ctx context.Context) (wait func() ([]chat.Tool, error)) {
	return asyncValue(func() ([]chat.Tool, error) { return s.listTools(ctx) })
}

func (s *Session) listTools(ctx context.Context) ([]chat.Tool, error) {
	session, err := s.connected()
	if err != nil {
		return nil, err
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, unbind := s.bind(c)
	defer unbind()
	var out []chat.Tool
	for t, err := range session.Tools(c, nil) {
		if err != nil {
			if ended := s.Err(); ended != nil {
				return nil, ended
			}
			return nil, err
		}
		schema := mcpwire.DefaultInputSchema
		if t.InputSchema != nil {
			b, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
			}
			if !bytes.Equal(b, []byte("null")) {
				schema = b
			}
		}
		out = append(out, chat.NewTool(t.Name, t.Description, schema))
	}
	return out, nil
}

// CallTool sends tools/call and returns its outcome. When ctx ends first
// it returns ctx's error (the SDK tells the server the request is
// cancelled). A JSON-RPC error object the server answers with is an
// outcome as from a stdio server (mcpwire.ErrorOutcome), and the session
// goes on. A connection that fails during the call answers it
// indeterminate and ends the session with ErrBroken.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (wait func() (outcome.Outcome, error)) {
	return asyncValue(func() (outcome.Outcome, error) { return s.callTool(ctx, name, args) })
}

func (s *Session) callTool(ctx context.Context, name string, args json.RawMessage) (outcome.Outcome, error) {
	session, err := s.connected()
	if err != nil {
		return outcome.Outcome{}, err
	}
	c, unbind := s.bind(ctx)
	defer unbind()
	res, err := session.CallTool(c, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return outcome.Outcome{}, ctx.Err()
		}
		if ended := s.Err(); ended != nil {
			return outcome.Outcome{}, ended
		}
		if answer, ok := errorObject(err); ok {
			// The server answered with an error object: the session is
			// sound, and the call is classified as a stdio server's.
			return mcpwire.ErrorOutcome(int(answer.Code), s.cfg.Redact(answer.Message)), nil
		}
		// The request may have reached the server: the effect is
		// unknown, and the call is never sent again.
		s.fail(fmt.Errorf("%w: %w", ErrBroken, err))
		return outcome.Unknown(mcpwire.ErrorCodeMCP, "Las connection failed during the call: "+s.cfg.Redact(err.Error())), nil
	}
	b, err := json.Marshal(res)
	switch {
	case err != nil:
		return outcome.Unknown(mcpwire.ErrorCodeMCP, "Las answered with a malformed tools/call result"), nil
	case res.IsError:
		return outcome.Outcome{Status: outcome.Failed, ErrorCode: mcpwire.ErrorCodeRemoteTool, Content: b}, nil
	default:
		return outcome.Succeeded(b), nil
	}
}

// errorObject is the JSON-RPC error object a server answered a request
// with, when err (from the SDK's session) is one. The SDK returns such an
// answer as the direct cause of the request's error ("calling %q: %w").
// Its own transport failures are *jsonrpc.Error values too (wrapped in
// jsonrpc2.ErrRejected, -32005), but deeper down, beside the failure:
// errors.As would take them for an answer, and a dropped connection for
// a sound session.
func errorObject(err error) (*jsonrpc.Error, bool) {
	answer, ok := errors.Unwrap(err).(*jsonrpc.Error)
	return answer, ok && answer != nil
}

// Ping sends ping and waits for its answer until ctx ends.
func (s *Session) Ping(ctx context.Context) (wait func() error) {
	return async(func() error { return s.ping(ctx) })
}

func (s *Session) ping(ctx context.Context) error {
	session, err := s.connected()
	if err != nil {
		return err
	}
	c, unbind := s.bind(ctx)
	defer unbind()
	if err := session.Ping(c, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ended := s.Err(); ended != nil {
			return ended
		}
		return err
	}
	return nil
}

// async runs f on a goroutine of its own and returns a function that waits
// for its error.
func async(f func() error) func() error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return func() error { return <-done }
}

// asyncValue is async for a function with a value.
func asyncValue[T any](f func() (T, error)) func() (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	return func() (T, error) {
		r := <-done
		return r.v, r.err
	}
}

// headers puts a remote server's headers on every request and the
// being's agentId into the initialize request's params, as the stdio
// client sends it (docs/las.md#handshake). It sends nothing to another
// origin than its own, and each response body it returns fails past
// maxReply bytes (past maxReply+sseSlack within one event, for an event
// stream).
type headers struct {
	origin   string
	headers  map[string]string
	agentID  string
	maxReply int64
	next     http.RoundTripper
}

func (t *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := origin(req.URL); o != t.origin {
		return nil, fmt.Errorf("%w: request to %s", ErrCrossOriginRedirect, o)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if req.Method == http.MethodPost && req.Body != nil && t.agentID != "" {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = withAgentID(body, t.agentID)
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		resp.Body = newCappedBody(resp.Body, t.maxReply+sseSlack, true)
	} else {
		resp.Body = newCappedBody(resp.Body, t.maxReply, false)
	}
	return resp, nil
}

// newCappedBody returns body failing past max bytes: in all, or, when
// events is set, within one event.
func newCappedBody(body io.ReadCloser, max int64, events bool) *cappedBody {
	return &cappedBody{body: body, max: max, events: events, lineEmpty: true}
}

// cappedBody is a response body that fails with ErrReplyTooLarge once
// more than max bytes are read: in all, or, when events is set, since
// the last blank line (the end of an event of an event stream).
type cappedBody struct {
	body   io.ReadCloser
	max    int64
	events bool

	n         int64 // bytes counted against max
	cr        bool  // the last byte was '\r'
	lineEmpty bool  // no byte yet on the current line
	err       error // sticky: once too large, always
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.body.Read(p)
	if !b.events {
		b.n += int64(n)
		if b.n > b.max {
			return n, b.tooLarge()
		}
		return n, err
	}
	for _, c := range p[:n] {
		if b.n++; b.n > b.max {
			return n, b.tooLarge()
		}
		if c == '\n' && b.cr { // the end of a CRLF
			b.cr = false
			continue
		}
		b.cr = c == '\r'
		if c == '\n' || c == '\r' {
			if b.lineEmpty {
				b.n = 0 // a blank line ends the event
			}
			b.lineEmpty = true
		} else {
			b.lineEmpty = false
		}
	}
	return n, err
}

func (b *cappedBody) tooLarge() error {
	b.err = fmt.Errorf("%w: more than %d bytes", ErrReplyTooLarge, b.max)
	return b.err
}

func (b *cappedBody) Close() error { return b.body.Close() }

// origin is scheme://host:port of u, with the scheme's default port
// when u has none.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// withAgentID adds "agentId" to the params of an initialize request;
// any other body is returned as it is.
func withAgentID(body []byte, agentID string) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || string(msg["method"]) != `"initialize"` {
		return body
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return body
	}
	id, _ := json.Marshal(agentID)
	params["agentId"] = id
	p, err := json.Marshal(params)
	if err != nil {
		return body
	}
	msg["params"] = p
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}
