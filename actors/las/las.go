package las

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/mailbox"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// Outcome messages of calls that never reached Las or whose effect is
// unknown.
const (
	msgRestarting     = "Las is restarting"
	msgUnavailable    = "Las is unavailable"
	msgDeadlinePassed = "the call's deadline passed before it was sent to Las"
	msgNoAnswer       = "Las did not answer within the deadline"
	msgUnknownTool    = "tool is not in the current catalog"
	msgBadArguments   = "arguments must be a JSON object"
)

// ErrIntensityExceeded is wrapped by the failure of a Las that was
// restarted past its intensity (docs/las.md#las-at-boot): at boot the being
// then goes on with built-in tools unless surfaces are required.
var ErrIntensityExceeded = errors.New("Las restart intensity exceeded")

// Self-addressed timer messages.
type (
	requestExpired struct {
		gen uint64
		id  int64
	}
	heldExpired struct{ key uint64 }
	pingTick    struct{ gen uint64 }
	eofSettled  struct{ gen uint64 }
)

type phase int

const (
	phaseStarting phase = iota
	phaseInitializing
	phaseListing
	phaseReady
	phaseStopping
)

func (p phase) String() string {
	switch p {
	case phaseStarting, phaseInitializing, phaseListing:
		return "starting"
	case phaseReady:
		return "running"
	default:
		return "stopping"
	}
}

type reqKind int

const (
	reqInitialize reqKind = iota + 1
	reqList
	reqCall
	reqPing
)

// pending is one request sent to Las and not yet answered.
type pending struct {
	kind   reqKind
	method string
	sender *actor.PID // who waits for a call's outcome
	stop   func() bool
}

// heldCall is a call that arrived while Las was not ready. It waits for
// the session (across restarts) until its own deadline.
type heldCall struct {
	key      uint64
	req      messages.LasCallRequest
	deadline time.Time
	sender   *actor.PID
	stop     func() bool
}

// history is what outlives one incarnation of the actor: the supervisor
// replaces the Las value on restart, but the props' producer hands every
// incarnation the same history. Only the actor's goroutine touches it.
type history struct {
	restarts   int    // from the supervisor's messages.Restarted
	lastReason string // the failure that caused the last restart
	booted     bool   // a session was ready once: missing surfaces are now transient
	failure    error  // what the last incarnation failed with, until the next is up
	nextKey    uint64
	held       []*heldCall
	catalogs   []*actor.PID // LasCatalogRequest senders waiting for readiness
}

// generations numbers Las processes across the whole process, not per
// actor: a being restarted by its supervisor spawns a new Las actor under
// the same name, and late news from the old process must not be taken for
// news from the new one.
var generations atomic.Uint64

// Las is the actor owning one Las process and its MCP session.
//
// Calls made while Las is starting or restarting wait for the session if
// it is ready within the call's deadline; when the deadline passes first
// they come back indeterminate with "Las is restarting", never having
// been sent. Calls in flight when Las fails come back indeterminate and
// are never replayed (docs/las.md#calls-in-flight).
type Las struct {
	opts Options
	h    *history
	log  *slog.Logger

	gen     uint64
	proc    *process
	phase   phase
	nextID  int64
	pending map[int64]*pending
	tools   []chat.Tool
	known   map[string]bool
	listing []chat.Tool
	// inList is set while a listing (all its pages) is in flight;
	// listAgain records a list_changed that arrived meanwhile: one more
	// listing follows (docs/las.md#re-lists).
	inList    bool
	listAgain bool
	pingID    int64
	pingers   []*actor.PID
	ticker    func() bool
	eof       bool
}

var _ actor.Actor = (*Las)(nil)

// Props returns the props of a Las actor. Spawn them once (the props keep
// the actor's history across restarts), with a stable name — the
// supervision route matches "las" — under a parent whose supervisor is
// supervision.ForLas or includes supervision.LasRoute.
//
// With Options.Servers set the props are those of the Group: one Las per
// server under it, the same messages answered.
func Props(opts Options) *actor.Props {
	opts = opts.withDefaults()
	if len(opts.Servers) > 0 {
		return groupProps(opts)
	}
	if opts.server != nil && opts.server.URL != "" {
		return remoteProps(opts)
	}
	h := &history{}
	return actor.PropsFromProducer(func() actor.Actor {
		log := opts.Logger.With("actor", "las", "being", opts.BeingName, "agent_id", opts.AgentID)
		if opts.server != nil {
			log = log.With("server", opts.server.Name)
		}
		return &Las{opts: opts, h: h, log: log}
	}, actor.WithDispatcher(mailbox.Shared))
}

// Receive dispatches one message. Values, not pointers, are the message
// types of package messages.
func (a *Las) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.handleStarted(ctx)
	case *actor.Restarting:
		a.handleRestarting()
	case *actor.Stopping:
		a.handleStopping(ctx)
	case messages.Restarted:
		a.handleRestarted(ctx, m)
	case messages.LasCallRequest:
		a.handleCall(ctx, ctx.Sender(), m)
	case messages.LasCatalogRequest:
		a.handleCatalog(ctx)
	case messages.LasPingRequest:
		a.ping(ctx, ctx.Sender())
	case messages.DescribeRequest:
		ctx.Respond(a.describe())
	case lineRead:
		a.handleLine(ctx, m)
	case readEnded:
		a.handleReadEnded(ctx, m)
	case eofSettled:
		a.handleEOFSettled(ctx, m)
	case processExited:
		a.handleExited(ctx, m)
	case writeFailed:
		a.handleWriteFailed(ctx, m)
	case requestExpired:
		a.handleExpired(ctx, m)
	case heldExpired:
		a.handleHeldExpired(ctx, m)
	case pingTick:
		a.handlePingTick(ctx, m)
	}
}

// --- lifecycle -----------------------------------------------------------

func (a *Las) handleStarted(ctx actor.Context) {
	a.gen = generations.Add(1)
	a.pending = map[int64]*pending{}
	a.h.failure = nil
	env, err := environment(a.opts)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	proc, err := spawn(a.opts, env, a.gen, func(m any) { system.Root.Send(self, m) })
	if err != nil {
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "cannot start Las: %w", err))
		return
	}
	a.proc = proc
	a.log.Info("Las started", "pid", proc.pid, "generation", a.gen)
	a.phase = phaseInitializing
	params := mcpwire.NewInitializeParams(a.opts.ClientVersion, a.opts.AgentID)
	if a.opts.Workspace != "" {
		params = params.WithRoots()
	}
	a.request(ctx, reqInitialize, mcpwire.MethodInitialize, params, time.Now().Add(a.opts.CallTimeout), nil)
}

func (a *Las) handleRestarting() {
	a.stopTimers()
	if a.proc != nil {
		a.proc.kill()
		a.proc = nil
	}
}

// handleRestarted keeps the supervisor's restart news for the debug
// tree and passes it on to the parent as LasRestarted.
func (a *Las) handleRestarted(ctx actor.Context, m messages.Restarted) {
	a.h.restarts, a.h.lastReason = m.Restarts, m.Reason
	a.tell(ctx, messages.LasRestarted{Restarts: m.Restarts, Reason: m.Reason})
}

// handleStopping runs the shutdown ladder and answers everyone still
// waiting. When the actor is stopped because it failed (its supervisor
// gave up) it tells the parent Las is unavailable.
func (a *Las) handleStopping(ctx actor.Context) {
	a.phase = phaseStopping
	a.stopTimers()
	if a.proc != nil {
		a.log.Info("stopping Las", "pid", a.proc.pid)
		a.proc.shutdown(a.opts.ShutdownGrace, a.opts.TermGrace)
		a.proc = nil
	}
	a.answerPending(ctx, "Las is shutting down")

	failure := a.h.failure
	var gone *messages.LasUnavailable
	if failure != nil {
		gone = &messages.LasUnavailable{Reason: failure.Error(), Err: failure}
		if supervision.KindOf(failure) != supervision.Permanent {
			gone.Reason = supervision.ReasonIntensityExceeded
			last := supervision.Upstream(supervision.ClassMCP, supervision.Permanent,
				"Las unavailable: %s (last failure: %w)", supervision.ReasonIntensityExceeded, failure)
			last.Err = errors.Join(last.Err, ErrIntensityExceeded)
			gone.Err = last
		}
	}
	for _, c := range a.h.held {
		c.stop()
		reply(ctx, c.sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgUnavailable)})
	}
	a.h.held = nil
	resp := messages.LasCatalogResponse{Available: false, Err: supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "Las is unavailable")}
	if gone != nil {
		resp.Err = gone.Err
	}
	for _, pid := range a.h.catalogs {
		reply(ctx, pid, resp)
	}
	a.h.catalogs = nil
	if gone != nil {
		a.log.Warn(gone.String())
		a.tell(ctx, *gone)
	}
}

func (a *Las) stopTimers() {
	if a.ticker != nil {
		a.ticker()
		a.ticker = nil
	}
	for _, p := range a.pending {
		p.stop()
	}
}

// fail ends this incarnation: in-flight calls come back indeterminate,
// the process is killed, and the actor panics with err so that its
// supervisor decides (restart on transient, stop on permanent). It never
// returns; callers still write a return after it, so that no handler
// reads as if it went on.
func (a *Las) fail(ctx actor.Context, err error) {
	a.h.failure = err
	a.log.Warn("Las failed", "error", a.opts.Secrets.RedactString(err.Error()), "kind", supervision.KindOf(err).String())
	a.answerPending(ctx, "Las failed during the call: "+err.Error())
	if supervision.KindOf(err) == supervision.Permanent {
		for _, pid := range a.h.catalogs {
			reply(ctx, pid, messages.LasCatalogResponse{Available: false, Err: err})
		}
		a.h.catalogs = nil
	}
	a.stopTimers()
	if a.proc != nil {
		a.proc.kill()
		a.proc = nil
	}
	panic(err)
}

// answerPending fails every in-flight request: calls indeterminate (they
// may have reached Las), pings not OK.
func (a *Las) answerPending(ctx actor.Context, msg string) {
	for id, p := range a.pending {
		p.stop()
		if p.kind == reqCall {
			reply(ctx, p.sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msg)})
		}
		delete(a.pending, id)
	}
	a.pingID = 0
	for _, pid := range a.pingers {
		reply(ctx, pid, messages.LasPingResponse{OK: false})
	}
	a.pingers = nil
}

// --- process news --------------------------------------------------------

func (a *Las) handleReadEnded(ctx actor.Context, m readEnded) {
	if m.gen != a.gen {
		return
	}
	if errors.Is(m.err, mcpwire.ErrLineTooLong) {
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %w", supervision.ErrLasLineTooLong, m.err))
		return
	}
	// Stdout closed. If the process is exiting its exit report follows
	// at once and names the better reason; give it a moment.
	a.eof = true
	a.after(ctx, 200*time.Millisecond, eofSettled{gen: a.gen})
}

func (a *Las) handleEOFSettled(ctx actor.Context, m eofSettled) {
	if m.gen != a.gen || a.proc == nil {
		return
	}
	a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w", supervision.ErrLasStdoutClosed))
}

func (a *Las) handleExited(ctx actor.Context, m processExited) {
	if m.gen != a.gen || a.proc == nil {
		return
	}
	status := "exit status 0"
	if m.err != nil {
		status = m.err.Error()
	}
	a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w (%s)", supervision.ErrLasExited, status))
}

func (a *Las) handleWriteFailed(ctx actor.Context, m writeFailed) {
	if m.gen != a.gen || a.proc == nil {
		return
	}
	a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %w", supervision.ErrLasStdinWrite, m.err))
}

// --- requests ------------------------------------------------------------

// request sends one request and arms its deadline. A write that cannot
// even be queued fails the session (the request is pending by then, so a
// call among them is answered indeterminate).
func (a *Las) request(ctx actor.Context, kind reqKind, method string, params any, deadline time.Time, sender *actor.PID) int64 {
	a.nextID++
	id := a.nextID
	frame, err := mcpwire.Request(id, method, params)
	if err != nil {
		// Only our own parameters are encoded here; raw arguments were
		// checked to be a JSON object before.
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "encode %s: %w", method, err))
		return 0
	}
	p := &pending{kind: kind, method: method, sender: sender}
	p.stop = a.after(ctx, time.Until(deadline), requestExpired{gen: a.gen, id: id})
	a.pending[id] = p
	a.send(ctx, frame)
	return id
}

func (a *Las) send(ctx actor.Context, frame []byte) {
	if a.proc == nil {
		return
	}
	if err := a.proc.write(frame); err != nil {
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %w", supervision.ErrLasStdinWrite, err))
		return
	}
}

func (a *Las) notify(ctx actor.Context, method string, params any) {
	frame, err := mcpwire.Notification(method, params)
	if err == nil {
		a.send(ctx, frame)
	}
}

func (a *Las) handleExpired(ctx actor.Context, m requestExpired) {
	if m.gen != a.gen {
		return
	}
	p, ok := a.pending[m.id]
	if !ok {
		return
	}
	delete(a.pending, m.id)
	switch p.kind {
	case reqCall:
		// Tell Las we gave up before telling the caller, then check Las
		// is still alive: a hung server fails the ping and is restarted.
		a.notify(ctx, mcpwire.MethodCancelled, mcpwire.CancelledParams{RequestID: m.id, Reason: "deadline exceeded"})
		reply(ctx, p.sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgNoAnswer)})
		a.ping(ctx, nil)
	case reqPing:
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: liveness ping deadline exceeded", supervision.ErrLasUnresponsive))
		return
	case reqInitialize:
		// Our own sentence (docs/las.md#las-at-boot), still a transient
		// failure that is restarted like any other.
		a.fail(ctx, &supervision.Error{Class: supervision.ClassMCP, Kind: supervision.Transient, Err: supervision.ErrLasUnresponsive,
			Msg: fmt.Sprintf("Las did not answer initialize within %s s", seconds(a.opts.CallTimeout))})
		return
	default:
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: no answer to %s within the deadline", supervision.ErrLasUnresponsive, p.method))
		return
	}
}

// --- lines from Las ------------------------------------------------------

func (a *Las) handleLine(ctx actor.Context, m lineRead) {
	if m.gen != a.gen || mcpwire.IsBlank(m.line) {
		return
	}
	msg, err := mcpwire.Classify(m.line)
	if err != nil {
		// The line itself may hold anything; log its size only.
		a.log.Warn("skipped a line from Las that is not JSON-RPC", "bytes", len(m.line))
		return
	}
	switch msg.Kind {
	case mcpwire.KindNotification:
		if msg.Method == mcpwire.MethodToolsListChanged && (a.phase == phaseReady || a.phase == phaseListing) {
			a.startListing(ctx)
		}
	case mcpwire.KindRequest:
		if msg.Method == mcpwire.MethodRootsList && a.opts.Workspace != "" {
			a.send(ctx, mcpwire.RootsAnswer(msg.ID, a.opts.Workspace, "workspace"))
			return
		}
		a.log.Info("refused a request from Las", "method", msg.Method)
		a.send(ctx, mcpwire.MethodNotFound(msg.ID, msg.Method))
	case mcpwire.KindResponse:
		a.handleResponse(ctx, msg)
	}
}

func (a *Las) handleResponse(ctx actor.Context, msg mcpwire.Message) {
	id, ok := msg.IntID()
	p := a.pending[id]
	if !ok || p == nil {
		a.log.Warn("dropped a response with an unknown id", "id", string(msg.ID))
		return
	}
	delete(a.pending, id)
	p.stop()
	switch p.kind {
	case reqInitialize:
		a.onInitialize(ctx, msg)
	case reqList:
		a.onList(ctx, msg)
	case reqCall:
		reply(ctx, p.sender, messages.LasCallResponse{Outcome: mcpwire.CallOutcome(msg)})
	case reqPing:
		a.pingID = 0
		for _, pid := range a.pingers {
			reply(ctx, pid, messages.LasPingResponse{OK: msg.Error == nil})
		}
		a.pingers = nil
	}
}

func (a *Las) onInitialize(ctx actor.Context, msg mcpwire.Message) {
	if msg.Error != nil {
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "Las refused initialize: %s", msg.Error.Message))
		return
	}
	if err := mcpwire.CheckInitialize(msg.Result); err != nil {
		a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "Las negotiated an unsupported MCP version"))
		return
	}
	a.notify(ctx, mcpwire.MethodInitialized, nil)
	a.phase = phaseListing
	a.startListing(ctx)
}

// startListing lists the tools from the first page. Listings are
// serialized: a list_changed during one asks for one more after it.
func (a *Las) startListing(ctx actor.Context) {
	if a.inList {
		a.listAgain = true
		return
	}
	a.inList, a.listing = true, nil
	a.request(ctx, reqList, mcpwire.MethodToolsList, nil, time.Now().Add(a.opts.CallTimeout), nil)
}

func (a *Las) onList(ctx actor.Context, msg mcpwire.Message) {
	var page mcpwire.ToolsPage
	err := error(nil)
	if msg.Error != nil {
		err = fmt.Errorf("Las tools/list failed: %s", a.opts.Secrets.RedactString(msg.Error.Message))
	} else if page, err = mcpwire.ParseToolsPage(msg.Result); err != nil {
		err = errors.New("Las tools/list answer is malformed")
	}
	if err != nil {
		if a.phase != phaseReady {
			a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w", err))
			return
		}
		// A re-list that failed keeps the catalogue Las had.
		a.endListing(ctx)
		a.warnParent(ctx, "Las tools re-list refused, keeping the previous catalogue: "+err.Error())
		return
	}
	a.listing = append(a.listing, page.Tools...)
	if page.NextCursor != "" {
		a.request(ctx, reqList, mcpwire.MethodToolsList, mcpwire.ListParams{Cursor: page.NextCursor}, time.Now().Add(a.opts.CallTimeout), nil)
		return
	}
	tools := a.listing
	a.inList, a.listing = false, nil
	if a.phase == phaseReady {
		// Only a complete list that passes the catalogue's rules
		// replaces the one in use (docs/las.md#re-lists).
		if _, err := catalogCheck(tools); err != nil {
			a.warnParent(ctx, "Las tools re-list refused, keeping the previous catalogue: "+err.Error())
			a.endListing(ctx)
			return
		}
	}
	a.finishListing(ctx, tools)
	a.endListing(ctx)
}

// endListing starts the listing a list_changed asked for meanwhile.
func (a *Las) endListing(ctx actor.Context) {
	a.inList, a.listing = false, nil
	if a.listAgain && a.phase == phaseReady {
		a.listAgain = false
		a.startListing(ctx)
	}
}

// warnParent logs text and tells the parent, which journals it.
func (a *Las) warnParent(ctx actor.Context, text string) {
	a.log.Warn(text)
	a.tell(ctx, messages.LasWarning{Text: text})
}

// finishListing installs a complete tool list. A required surface missing
// at boot is permanent; after a restart it is a warning to the parent and
// a transient failure (retried under the backoff); after list_changed it
// is a warning only.
func (a *Las) finishListing(ctx actor.Context, tools []chat.Tool) {
	if missing := missingSurface(tools, a.opts.RequiredSurfaces); missing != "" {
		switch {
		case !a.h.booted:
			a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "required Las surface unavailable: %s", missing))
			return
		case a.phase != phaseReady:
			a.tell(ctx, messages.LasSurfaceMissing{Surface: missing})
			a.fail(ctx, supervision.Upstream(supervision.ClassMCP, supervision.Transient, "%w: %s", supervision.ErrLasSurface, missing))
			return
		default:
			a.tell(ctx, messages.LasSurfaceMissing{Surface: missing})
		}
	}
	a.tools = tools
	a.known = make(map[string]bool, len(tools))
	for _, t := range tools {
		a.known[t.Function.Name] = true
	}
	first := a.phase != phaseReady
	a.phase = phaseReady
	a.h.booted = true
	a.log.Info("Las tools listed", "tools", len(tools))
	a.tell(ctx, messages.LasCatalogChanged{Tools: cloneTools(tools)})
	if !first {
		return
	}
	for _, pid := range a.h.catalogs {
		reply(ctx, pid, a.catalogResponse())
	}
	a.h.catalogs = nil
	held := a.h.held
	a.h.held = nil
	for _, c := range held {
		c.stop()
		a.handleCall(ctx, c.sender, c.req)
	}
	a.schedulePing(ctx)
}

// missingSurface returns the first required surface with no
// "<surface>__" tool in tools, or "".
func missingSurface(tools []chat.Tool, required []string) string {
	for _, s := range required {
		found := false
		for _, t := range tools {
			if strings.HasPrefix(t.Function.Name, s+"__") {
				found = true
				break
			}
		}
		if !found {
			return s
		}
	}
	return ""
}

// --- calls ---------------------------------------------------------------

func (a *Las) handleCall(ctx actor.Context, sender *actor.PID, req messages.LasCallRequest) {
	deadline := req.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(a.opts.CallTimeout)
		req.Deadline = deadline
	}
	if !time.Now().Before(deadline) {
		// The caller has given up already: never deliver it.
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgDeadlinePassed)})
		return
	}
	if a.phase != phaseReady {
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
	if args[0] != '{' || !jsonValid(args) {
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Failure("invalid_arguments", msgBadArguments)})
		return
	}
	a.request(ctx, reqCall, mcpwire.MethodToolsCall, mcpwire.CallParams{Name: req.Tool, Arguments: args}, deadline, sender)
}

func (a *Las) hold(ctx actor.Context, sender *actor.PID, req messages.LasCallRequest, deadline time.Time) {
	a.h.nextKey++
	c := &heldCall{key: a.h.nextKey, req: req, deadline: deadline, sender: sender}
	c.stop = a.after(ctx, time.Until(deadline), heldExpired{key: c.key})
	a.h.held = append(a.h.held, c)
}

func (a *Las) handleHeldExpired(ctx actor.Context, m heldExpired) { a.h.expireHeld(ctx, m.key) }

// expireHeld answers the held call key as indeterminate: its deadline
// passed while Las restarted (docs/las.md#calls-in-flight).
func (h *history) expireHeld(ctx actor.Context, key uint64) {
	for i, c := range h.held {
		if c.key == key {
			h.held = append(h.held[:i], h.held[i+1:]...)
			reply(ctx, c.sender, messages.LasCallResponse{Outcome: outcome.Unknown(mcpwire.ErrorCodeMCP, msgRestarting)})
			return
		}
	}
}

func (a *Las) handleCatalog(ctx actor.Context) {
	if a.phase != phaseReady {
		if s := ctx.Sender(); s != nil {
			a.h.catalogs = append(a.h.catalogs, s)
		}
		return
	}
	ctx.Respond(a.catalogResponse())
}

func (a *Las) catalogResponse() messages.LasCatalogResponse {
	return messages.LasCatalogResponse{Tools: cloneTools(a.tools), Available: true}
}

// --- liveness ------------------------------------------------------------

func (a *Las) schedulePing(ctx actor.Context) {
	if a.opts.PingInterval > 0 && a.ticker == nil {
		a.ticker = a.after(ctx, a.opts.PingInterval, pingTick{gen: a.gen})
	}
}

func (a *Las) handlePingTick(ctx actor.Context, m pingTick) {
	if m.gen != a.gen {
		return
	}
	a.ticker = nil
	a.ping(ctx, nil)
	a.schedulePing(ctx)
}

// ping sends one liveness ping unless one is in flight; waiter (if any)
// hears how it went.
func (a *Las) ping(ctx actor.Context, waiter *actor.PID) {
	if a.phase != phaseReady {
		reply(ctx, waiter, messages.LasPingResponse{OK: false})
		return
	}
	if waiter != nil {
		a.pingers = append(a.pingers, waiter)
	}
	if a.pingID != 0 {
		return
	}
	a.pingID = a.request(ctx, reqPing, mcpwire.MethodPing, nil, time.Now().Add(a.opts.PingTimeout), nil)
}

// --- describe ------------------------------------------------------------

func (a *Las) describe() messages.Description {
	pid := 0
	if a.proc != nil {
		pid = a.proc.pid
	}
	name := "las"
	if a.opts.server != nil {
		name = a.opts.server.Name
	}
	return messages.Description{
		Kind:   "las",
		Name:   name,
		Status: a.phase.String(),
		Figures: map[string]any{
			"process_id":          pid,
			"tool_count":          len(a.tools),
			"restarts":            a.h.restarts,
			"last_restart_reason": a.h.lastReason,
		},
	}
}

// --- helpers -------------------------------------------------------------

// after posts msg to the actor itself after d; the returned function
// cancels it.
func (a *Las) after(ctx actor.Context, d time.Duration, msg any) func() bool {
	self, system := ctx.Self(), ctx.ActorSystem()
	if d < 0 {
		d = 0
	}
	return time.AfterFunc(d, func() { system.Root.Send(self, msg) }).Stop
}

// tell sends msg to the parent with this actor as its sender, so that a
// Group parent knows which server speaks.
func (a *Las) tell(ctx actor.Context, msg any) {
	if parent := ctx.Parent(); parent != nil {
		ctx.Request(parent, msg)
	}
}

func reply(ctx actor.Context, to *actor.PID, msg any) {
	if to != nil {
		ctx.Send(to, msg)
	}
}

func cloneTools(tools []chat.Tool) []chat.Tool { return append([]chat.Tool(nil), tools...) }

func jsonValid(b []byte) bool { return json.Valid(b) }

// seconds prints a deadline in whole seconds, or with the fraction a
// sub-second deadline needs.
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprint(int64(d / time.Second))
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// catalogCheck applies the catalogue's registration rules
// (docs/tools.md#the-catalogue) to a server's own list.
func catalogCheck(tools []chat.Tool) (*catalog.Catalog, error) { return catalog.Build(tools, nil, nil) }
