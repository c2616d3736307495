package las

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wisent/singularity/internal/mailbox"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// Messages the remote session's goroutines post to the actor.
type (
	remoteConnected struct {
		gen     uint64
		session *mcp.ClientSession
		tools   []chat.Tool
		err     error
	}
	remoteListed struct {
		gen   uint64
		tools []chat.Tool
		err   error
	}
	remoteBroken struct {
		gen uint64
		err error
	}
	remoteListChanged struct{ gen uint64 }
)

// Remote is the Las actor of a remote server of a servers file
// (docs/las.md#several-mcp-servers): one MCP session over streamable HTTP
// with the official MCP Go SDK client, protocol 2024-11-05 (checked), the
// entry's headers on every request and the being's agentId in
// initialize. It answers the messages of the stdio Las and fails the
// same way: a session that cannot be opened or breaks is a transient
// failure its supervisor restarts.
//
// A call whose connection drops is indeterminate and never replayed: the
// transport does not reconnect (MaxRetries -1), and the broken session is
// restarted for the calls after it.
type Remote struct {
	opts    Options
	h       *history
	log     *slog.Logger
	gen     uint64
	session *mcp.ClientSession
	ready   bool
	tools   []chat.Tool
	known   map[string]bool
	inList  bool
	again   bool
	cancel  context.CancelFunc
}

var _ actor.Actor = (*Remote)(nil)

func remoteProps(opts Options) *actor.Props {
	h := &history{}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Remote{opts: opts, h: h, log: opts.Logger.With("actor", "las", "being", opts.BeingName, "server", opts.server.Name)}
	}, actor.WithDispatcher(mailbox.Shared))
}

// Receive dispatches one message.
func (a *Remote) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.handleStarted(ctx)
	case *actor.Restarting:
		a.closeSession()
	case *actor.Stopping:
		a.handleStopping(ctx)
	case messages.Restarted:
		a.h.restarts, a.h.lastReason = m.Restarts, m.Reason
		a.tell(ctx, messages.LasRestarted{Restarts: m.Restarts, Reason: m.Reason})
	case remoteConnected:
		a.handleConnected(ctx, m)
	case remoteListChanged:
		if m.gen == a.gen {
			a.relist(ctx)
		}
	case remoteListed:
		a.handleListed(ctx, m)
	case remoteBroken:
		if m.gen == a.gen {
			a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %s", supervision.ErrLasUnresponsive, a.opts.Secrets.RedactString(m.err.Error())))
		}
	case messages.LasCallRequest:
		a.handleCall(ctx, ctx.Sender(), m)
	case messages.LasCatalogRequest:
		if !a.ready {
			if s := ctx.Sender(); s != nil {
				a.h.catalogs = append(a.h.catalogs, s)
			}
			return
		}
		ctx.Respond(messages.LasCatalogResponse{Tools: cloneTools(a.tools), Available: true})
	case messages.LasPingRequest:
		a.handlePing(ctx)
	case messages.DescribeRequest:
		ctx.Respond(a.describe())
	case heldExpired:
		a.h.expireHeld(ctx, m.key)
	}
}

func (a *Remote) handleStarted(ctx actor.Context) {
	a.gen = generations.Add(1)
	a.h.failure = nil
	gen, self, system := a.gen, ctx.Self(), ctx.ActorSystem()
	post := func(m any) { system.Root.Send(self, m) }
	base, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	client := mcp.NewClient(&mcp.Implementation{Name: "singularity", Version: a.opts.ClientVersion}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { post(remoteListChanged{gen: gen}) },
	})
	transport := &mcp.StreamableClientTransport{
		Endpoint:   a.opts.server.URL,
		HTTPClient: &http.Client{Transport: &remoteHeaders{headers: a.opts.server.Headers, agentID: a.opts.AgentID, next: http.DefaultTransport}},
		MaxRetries: -1, // a dropped connection is never retried: no call is replayed
	}
	timeout := a.opts.CallTimeout
	go func() {
		c, done := context.WithTimeout(base, timeout)
		defer done()
		session, err := client.Connect(c, transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.ProtocolVersion})
		if err != nil {
			if errors.Is(c.Err(), context.DeadlineExceeded) {
				err = errInitializeTimeout
			}
			post(remoteConnected{gen: gen, err: err})
			return
		}
		if v := session.InitializeResult().ProtocolVersion; v != mcpwire.ProtocolVersion {
			_ = session.Close()
			post(remoteConnected{gen: gen, err: fmt.Errorf("%w: %q", mcpwire.ErrUnsupportedVersion, v)})
			return
		}
		tools, err := listRemote(base, session, timeout)
		post(remoteConnected{gen: gen, session: session, tools: tools, err: err})
	}()
}

var errInitializeTimeout = errors.New("initialize timed out")

func (a *Remote) handleConnected(ctx actor.Context, m remoteConnected) {
	if m.gen != a.gen {
		if m.session != nil {
			_ = m.session.Close()
		}
		return
	}
	switch {
	case errors.Is(m.err, mcpwire.ErrUnsupportedVersion):
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "Las negotiated an unsupported MCP version"))
		return
	case errors.Is(m.err, errInitializeTimeout):
		a.fail(ctx, &supervision.Error{Class: supervision.ClassMCP, Kind: supervision.Transient, Err: supervision.ErrLasUnresponsive,
			Msg: fmt.Sprintf("Las did not answer initialize within %s s", seconds(a.opts.CallTimeout))})
		return
	case m.err != nil:
		if m.session != nil {
			_ = m.session.Close()
		}
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %s", supervision.ErrLasExited, a.opts.Secrets.RedactString(m.err.Error())))
		return
	}
	a.session = m.session
	a.install(ctx, m.tools)
	a.ready = true
	for _, pid := range a.h.catalogs {
		ctx.Send(pid, messages.LasCatalogResponse{Tools: cloneTools(a.tools), Available: true})
	}
	a.h.catalogs = nil
	held := a.h.held
	a.h.held = nil
	for _, c := range held {
		c.stop()
		a.handleCall(ctx, c.sender, c.req)
	}
}

func (a *Remote) install(ctx actor.Context, tools []chat.Tool) {
	a.tools = tools
	a.known = make(map[string]bool, len(tools))
	for _, t := range tools {
		a.known[t.Function.Name] = true
	}
	a.log.Info("Las tools listed", "tools", len(tools))
	a.tell(ctx, messages.LasCatalogChanged{Tools: cloneTools(tools)})
}

// relist lists the tools again, one listing at a time
// (docs/las.md#re-lists).
func (a *Remote) relist(ctx actor.Context) {
	if !a.ready {
		return
	}
	if a.inList {
		a.again = true
		return
	}
	a.inList = true
	gen, self, system, session, timeout := a.gen, ctx.Self(), ctx.ActorSystem(), a.session, a.opts.CallTimeout
	go func() {
		tools, err := listRemote(context.Background(), session, timeout)
		system.Root.Send(self, remoteListed{gen: gen, tools: tools, err: err})
	}()
}

func (a *Remote) handleListed(ctx actor.Context, m remoteListed) {
	if m.gen != a.gen {
		return
	}
	a.inList = false
	if m.err == nil {
		_, m.err = catalogCheck(m.tools)
	}
	if m.err != nil {
		text := "Las tools re-list refused, keeping the previous catalogue: " + a.opts.Secrets.RedactString(m.err.Error())
		a.log.Warn(text)
		a.tell(ctx, messages.LasWarning{Text: text})
	} else {
		a.install(ctx, m.tools)
	}
	if a.again {
		a.again = false
		a.relist(ctx)
	}
}

// listRemote reads every page of tools/list.
func listRemote(base context.Context, s *mcp.ClientSession, timeout time.Duration) ([]chat.Tool, error) {
	c, cancel := context.WithTimeout(base, timeout)
	defer cancel()
	var out []chat.Tool
	for t, err := range s.Tools(c, nil) {
		if err != nil {
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

func (a *Remote) handleCall(ctx actor.Context, sender *actor.PID, req messages.LasCallRequest) {
	deadline := req.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(a.opts.CallTimeout)
		req.Deadline = deadline
	}
	if !time.Now().Before(deadline) {
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgDeadlinePassed)})
		return
	}
	if !a.ready {
		a.hold(ctx, sender, req, deadline)
		return
	}
	if !a.known[req.Tool] {
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Failure("unknown_tool", msgUnknownTool)})
		return
	}
	args := bytes.TrimSpace(req.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Failure("invalid_arguments", msgBadArguments)})
		return
	}
	gen, self, system, session, secrets := a.gen, ctx.Self(), ctx.ActorSystem(), a.session, a.opts.Secrets
	go func() {
		c, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		res, err := session.CallTool(c, &mcp.CallToolParams{Name: req.Tool, Arguments: json.RawMessage(args)})
		var o outcome.Outcome
		switch {
		case err != nil:
			// The request may have reached the server: the effect is
			// unknown, and the call is never sent again.
			o = outcome.Unknown(mcpwire.ErrorCodeMCP, "Las connection failed during the call: "+secrets.RedactString(err.Error()))
			if c.Err() == nil {
				system.Root.Send(self, remoteBroken{gen: gen, err: err})
			} else {
				o = outcome.Unknown(mcpwire.ErrorCodeMCP, msgNoAnswer)
			}
		default:
			b, merr := json.Marshal(res)
			switch {
			case merr != nil:
				o = outcome.Unknown(mcpwire.ErrorCodeMCP, "Las answered with a malformed tools/call result")
			case res.IsError:
				o = outcome.Outcome{Status: outcome.Failed, ErrorCode: mcpwire.ErrorCodeRemoteTool, Content: b}
			default:
				o = outcome.Succeeded(b)
			}
		}
		if sender != nil {
			system.Root.Send(sender, messages.LasCallResponse{Outcome: o})
		}
	}()
}

func (a *Remote) hold(ctx actor.Context, sender *actor.PID, req messages.LasCallRequest, deadline time.Time) {
	a.h.nextKey++
	c := &heldCall{key: a.h.nextKey, req: req, deadline: deadline, sender: sender}
	self, system := ctx.Self(), ctx.ActorSystem()
	key := c.key
	c.stop = time.AfterFunc(time.Until(deadline), func() { system.Root.Send(self, heldExpired{key: key}) }).Stop
	a.h.held = append(a.h.held, c)
}

func (a *Remote) handlePing(ctx actor.Context) {
	sender, session, timeout := ctx.Sender(), a.session, a.opts.PingTimeout
	if !a.ready || session == nil {
		reply(ctx, sender, messages.LasPingResponse{OK: false})
		return
	}
	system := ctx.ActorSystem()
	go func() {
		c, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := session.Ping(c, nil)
		if sender != nil {
			system.Root.Send(sender, messages.LasPingResponse{OK: err == nil})
		}
	}()
}

func (a *Remote) fail(ctx actor.Context, err error) {
	a.h.failure = err
	a.log.Warn("Las failed", "error", a.opts.Secrets.RedactString(err.Error()), "kind", supervision.KindOf(err).String())
	if supervision.KindOf(err) == supervision.Permanent {
		for _, pid := range a.h.catalogs {
			ctx.Send(pid, messages.LasCatalogResponse{Available: false, Err: err})
		}
		a.h.catalogs = nil
	}
	a.closeSession()
	panic(err)
}

func (a *Remote) closeSession() {
	a.ready = false
	if a.cancel != nil {
		a.cancel()
	}
	if a.session != nil {
		_ = a.session.Close()
		a.session = nil
	}
}

func (a *Remote) handleStopping(ctx actor.Context) {
	a.closeSession()
	failure := a.h.failure
	for _, c := range a.h.held {
		c.stop()
		reply(ctx, c.sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgUnavailable)})
	}
	a.h.held = nil
	if failure == nil {
		return
	}
	gone := messages.LasUnavailable{Reason: failure.Error(), Err: failure}
	if supervision.KindOf(failure) != supervision.Permanent {
		gone.Reason = supervision.ReasonIntensityExceeded
		last := supervision.Upstream(supervision.ClassMCP, supervision.Permanent,
			"Las unavailable: %s (last failure: %w)", supervision.ReasonIntensityExceeded, failure)
		last.Err = errors.Join(last.Err, ErrIntensityExceeded)
		gone.Err = last
	}
	for _, pid := range a.h.catalogs {
		ctx.Send(pid, messages.LasCatalogResponse{Available: false, Err: gone.Err})
	}
	a.h.catalogs = nil
	a.tell(ctx, gone)
}

func (a *Remote) describe() messages.Description {
	status := "starting"
	if a.ready {
		status = "running"
	}
	return messages.Description{
		Kind:   "las",
		Name:   a.opts.server.Name,
		Status: status,
		Figures: map[string]any{
			"transport":           "streamable-http",
			"tool_count":          len(a.tools),
			"restarts":            a.h.restarts,
			"last_restart_reason": a.h.lastReason,
		},
	}
}

func (a *Remote) tell(ctx actor.Context, msg any) {
	if parent := ctx.Parent(); parent != nil {
		ctx.Request(parent, msg)
	}
}

// remoteHeaders puts a remote server's headers on every request and the
// being's agentId into the initialize request's params, as the stdio
// client sends it (docs/las.md#handshake).
type remoteHeaders struct {
	headers map[string]string
	agentID string
	next    http.RoundTripper
}

func (t *remoteHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
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
	return t.next.RoundTrip(req)
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
