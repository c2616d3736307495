package las

import (
	"bytes"
	"context"
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
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
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

// Messages the actor posts to itself: the news of its session's
// goroutines and its timers. Each carries the generation of the session
// it is about: after a restart, late news of the old session is
// recognised and ignored.
type (
	initialized struct {
		gen uint64
		err error
	}
	toolsListed struct {
		gen   uint64
		tools []chat.Tool
		err   error
	}
	pinged struct {
		gen uint64
		err error
	}
	listChanged  struct{ gen uint64 }
	sessionEnded struct {
		gen uint64
		err error
	}
	callExpired struct{ gen uint64 }
	heldExpired struct{ key uint64 }
	pingTick    struct{ gen uint64 }
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
	restarts   int    // from the supervisor's supervision.Restarted
	lastReason string // the failure that caused the last restart
	booted     bool   // a session was ready once: missing surfaces are now transient
	failure    error  // what the last incarnation failed with, until the next is up
	nextKey    uint64
	held       []*heldCall
	catalogs   []*actor.PID // LasCatalogRequest senders waiting for readiness
}

// generations numbers sessions across the whole process, not per actor: a
// being restarted by its supervisor spawns a new Las actor under the same
// name, and late news from the old session must not be taken for news
// from the new one.
var generations atomic.Uint64

// Las is the actor owning one MCP session with one server: a Las process
// on stdio, or a remote server of a servers file over streamable HTTP
// (docs/las.md#several-mcp-servers). Both are driven the same way
// through the session interface; the session's blocking requests run
// on goroutines of their own and post what came of them back to the
// actor.
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

	gen   uint64
	sess  session
	phase phase
	tools []chat.Tool
	known map[string]bool
	// inList is set while a listing (all its pages) is in flight;
	// listAgain records a list_changed that arrived meanwhile: one more
	// listing follows (docs/las.md#re-lists).
	inList    bool
	listAgain bool
	pinging   bool
	pingers   []*actor.PID
	ticker    func() bool
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
	case supervision.Restarted:
		a.handleRestarted(ctx, m)
	case messages.LasCallRequest:
		a.handleCall(ctx, ctx.Sender(), m)
	case messages.LasCatalogRequest:
		a.handleCatalog(ctx)
	case messages.LasPingRequest:
		a.ping(ctx, ctx.Sender())
	case messages.DescribeRequest:
		ctx.Respond(a.describe())
	case initialized:
		a.handleInitialized(ctx, m)
	case toolsListed:
		a.handleListed(ctx, m)
	case listChanged:
		if m.gen == a.gen && (a.phase == phaseReady || a.phase == phaseListing) {
			a.startListing(ctx)
		}
	case pinged:
		a.handlePinged(ctx, m)
	case sessionEnded:
		a.handleSessionEnded(ctx, m)
	case callExpired:
		if m.gen == a.gen {
			a.ping(ctx, nil)
		}
	case heldExpired:
		a.h.expireHeld(ctx, m.key)
	case pingTick:
		a.handlePingTick(ctx, m)
	}
}

// --- lifecycle -----------------------------------------------------------

func (a *Las) handleStarted(ctx actor.Context) {
	a.gen = generations.Add(1)
	a.h.failure = nil
	gen, post := a.gen, a.poster(ctx)
	s, err := open(a.opts, func() { post(listChanged{gen: gen}) })
	if err != nil {
		a.fail(ctx, err)
		return
	}
	a.sess = s
	if pid := s.PID(); pid != 0 {
		a.log.Info("Las started", "pid", pid, "generation", gen)
	}
	go func() {
		<-s.Done()
		post(sessionEnded{gen: gen, err: s.Err()})
	}()
	a.phase = phaseInitializing
	wait := s.Initialize(context.Background())
	go func() { post(initialized{gen: gen, err: wait()}) }()
}

func (a *Las) handleRestarting() {
	a.stopTimers()
	a.endSession(errRestarting, false)
}

// handleRestarted keeps the supervisor's restart news for the debug
// tree and passes it on to the parent as LasRestarted.
func (a *Las) handleRestarted(ctx actor.Context, m supervision.Restarted) {
	a.h.restarts, a.h.lastReason = m.Restarts, m.Reason
	a.tell(ctx, messages.LasRestarted{Restarts: m.Restarts, Reason: m.Reason})
}

// handleStopping runs the shutdown ladder and answers everyone still
// waiting. When the actor is stopped because it failed (its supervisor
// gave up) it tells the parent Las is unavailable.
func (a *Las) handleStopping(ctx actor.Context) {
	a.phase = phaseStopping
	a.stopTimers()
	if a.sess != nil {
		if pid := a.sess.PID(); pid != 0 {
			a.log.Info("stopping Las", "pid", pid)
		}
	}
	a.endSession(errShuttingDown, true)
	a.answerPingers(ctx)

	failure := a.h.failure
	var gone *messages.LasUnavailable
	if failure != nil {
		gone = &messages.LasUnavailable{Reason: failure.Error(), Err: failure}
		if fault.KindOf(failure) != fault.Permanent {
			gone.Reason = supervision.ReasonIntensityExceeded
			last := fault.Upstream(fault.ClassMCP, fault.Permanent,
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
	resp := messages.LasCatalogResponse{Available: false, Err: fault.Upstream(fault.ClassMCP, fault.Permanent, "Las is unavailable")}
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
}

// endSession ends the session with cause, with the shutdown ladder when
// clean, else at once. The calls still waiting on it are answered by
// their goroutines (callFailure).
func (a *Las) endSession(cause error, clean bool) {
	if a.sess == nil {
		return
	}
	if clean {
		a.sess.Close(cause)
	} else {
		a.sess.Kill(cause)
	}
	a.sess = nil
}

// fail ends this incarnation: in-flight calls come back indeterminate,
// the session is ended at once (a process is killed), and the actor
// panics with err so that its supervisor decides (restart on transient,
// stop on permanent). It never returns; callers still write a return
// after it, so that no handler reads as if it went on.
func (a *Las) fail(ctx actor.Context, err error) {
	a.h.failure = err
	a.log.Warn("Las failed", "error", a.opts.Secrets.RedactString(err.Error()), "kind", fault.KindOf(err).String())
	if a.opts.OnFailure != nil {
		a.opts.OnFailure(a.opts.Secrets.RedactString(err.Error()))
	}
	if fault.KindOf(err) == fault.Permanent {
		for _, pid := range a.h.catalogs {
			reply(ctx, pid, messages.LasCatalogResponse{Available: false, Err: err})
		}
		a.h.catalogs = nil
	}
	a.stopTimers()
	a.endSession(err, false)
	a.answerPingers(ctx)
	panic(err)
}

// answerPingers tells everyone waiting for a ping that it failed.
func (a *Las) answerPingers(ctx actor.Context) {
	for _, pid := range a.pingers {
		reply(ctx, pid, messages.LasPingResponse{OK: false})
	}
	a.pingers = nil
}

// failEnded fails with why the session ended, once it has.
func (a *Las) failEnded(ctx actor.Context) bool {
	if err := a.sess.Err(); err != nil {
		a.fail(ctx, classify(err, a.opts.Secrets.RedactString))
		return true
	}
	return false
}

// handleSessionEnded fails the actor with why its session ended. While
// the handshake or a listing is in flight its answer is awaited first:
// what the server said before it went is handled before its end.
func (a *Las) handleSessionEnded(ctx actor.Context, m sessionEnded) {
	if m.gen != a.gen || a.sess == nil || a.busy() {
		return
	}
	a.fail(ctx, classify(m.err, a.opts.Secrets.RedactString))
}

// busy reports whether the handshake or a listing is in flight: when the
// session ends meanwhile, that request's answer comes first and the
// failure is handled with it, in the order the server spoke.
func (a *Las) busy() bool { return a.phase == phaseInitializing || a.inList }

// --- handshake and listings ----------------------------------------------

func (a *Las) handleInitialized(ctx actor.Context, m initialized) {
	if m.gen != a.gen || a.sess == nil {
		return
	}
	if m.err != nil {
		if a.failEnded(ctx) {
			return
		}
		a.fail(ctx, initializeFailure(m.err, a.opts))
		return
	}
	a.phase = phaseListing
	a.startListing(ctx)
}

// startListing lists the tools, all pages. Listings are serialized: a
// list_changed during one asks for one more after it.
func (a *Las) startListing(ctx actor.Context) {
	if a.inList {
		a.listAgain = true
		return
	}
	a.inList = true
	gen, post := a.gen, a.poster(ctx)
	wait := a.sess.ListTools(context.Background())
	go func() {
		tools, err := wait()
		post(toolsListed{gen: gen, tools: tools, err: err})
	}()
}

func (a *Las) handleListed(ctx actor.Context, m toolsListed) {
	if m.gen != a.gen || a.sess == nil {
		return
	}
	a.inList = false
	if m.err != nil {
		if a.failEnded(ctx) {
			return
		}
		if errors.Is(m.err, context.DeadlineExceeded) {
			a.fail(ctx, fault.Upstream(fault.ClassMCP, fault.Transient, "%w: no answer to %s within the deadline", supervision.ErrLasUnresponsive, mcpwire.MethodToolsList))
			return
		}
		text := listFailure(m.err, a.opts.Secrets.RedactString)
		if a.phase != phaseReady {
			a.fail(ctx, fault.Upstream(fault.ClassMCP, fault.Transient, "%w", errors.New(text)))
			return
		}
		// A re-list that failed keeps the catalogue Las had.
		a.warnParent(ctx, "Las tools re-list refused, keeping the previous catalogue: "+text)
		a.endListing(ctx)
		return
	}
	m.tools = screenTools(m.tools, a.opts.Secrets)
	if a.phase == phaseReady {
		// Only a complete list that passes the catalogue's rules
		// replaces the one in use (docs/las.md#re-lists).
		if _, err := catalogCheck(m.tools); err != nil {
			a.warnParent(ctx, "Las tools re-list refused, keeping the previous catalogue: "+err.Error())
			a.endListing(ctx)
			return
		}
	}
	a.finishListing(ctx, m.tools)
	if a.failEnded(ctx) {
		return
	}
	a.endListing(ctx)
}

// endListing starts the listing a list_changed asked for meanwhile.
func (a *Las) endListing(ctx actor.Context) {
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
			a.fail(ctx, fault.Upstream(fault.ClassMCP, fault.Permanent, "required Las surface unavailable: %s", missing))
			return
		case a.phase != phaseReady:
			a.tell(ctx, messages.LasSurfaceMissing{Surface: missing})
			a.fail(ctx, fault.Upstream(fault.ClassMCP, fault.Transient, "%w: %s", supervision.ErrLasSurface, missing))
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
	if args[0] != '{' || !json.Valid(args) {
		reply(ctx, sender, messages.LasCallResponse{Outcome: outcome.Failure("invalid_arguments", msgBadArguments)})
		return
	}
	a.call(ctx, sender, req.Tool, args, deadline)
}

// call sends one call, and a goroutine of its own waits for the answer
// and answers the caller. When the deadline passes first the session has
// told the server, the caller hears the call is indeterminate, and the
// actor pings the server at once (docs/las.md#calls-and-deadlines): a
// hung server is restarted, a merely slow tool is not. The ping is asked
// for before the caller is answered, so that it goes out before any call
// the caller makes next.
func (a *Las) call(ctx actor.Context, sender *actor.PID, tool string, args json.RawMessage, deadline time.Time) {
	gen, post, system, redact := a.gen, a.poster(ctx), ctx.ActorSystem(), a.opts.Secrets.RedactString
	c, cancel := context.WithDeadline(context.Background(), deadline)
	wait := a.sess.CallTool(c, tool, args)
	go func() {
		defer cancel()
		o, err := wait()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded):
			o = outcome.Unknown(mcpwire.ErrorCodeMCP, msgNoAnswer)
			post(callExpired{gen: gen})
		default:
			o = callFailure(err, redact)
		}
		if sender != nil {
			system.Root.Send(sender, messages.LasCallResponse{Outcome: o})
		}
	}()
}

// callFailure is the outcome of a call whose session ended before it was
// answered: indeterminate, for it may have had its effect.
func callFailure(err error, redact func(string) string) outcome.Outcome {
	if errors.Is(err, errShuttingDown) {
		return outcome.Unknown(mcpwire.ErrorCodeMCP, errShuttingDown.Error())
	}
	return outcome.Unknown(mcpwire.ErrorCodeMCP, "Las failed during the call: "+classify(err, redact).Error())
}

func (a *Las) hold(ctx actor.Context, sender *actor.PID, req messages.LasCallRequest, deadline time.Time) {
	a.h.nextKey++
	c := &heldCall{key: a.h.nextKey, req: req, deadline: deadline, sender: sender}
	c.stop = a.after(ctx, time.Until(deadline), heldExpired{key: c.key})
	a.h.held = append(a.h.held, c)
}

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
	if a.pinging {
		return
	}
	a.pinging = true
	gen, post := a.gen, a.poster(ctx)
	c, cancel := context.WithTimeout(context.Background(), a.opts.PingTimeout)
	wait := a.sess.Ping(c)
	go func() {
		defer cancel()
		post(pinged{gen: gen, err: wait()})
	}()
}

// handlePinged answers the ping's waiters. No answer in time is a
// transient failure (docs/las.md#liveness); an error answer is only a
// ping that is not OK.
func (a *Las) handlePinged(ctx actor.Context, m pinged) {
	if m.gen != a.gen || a.sess == nil {
		return
	}
	a.pinging = false
	if m.err != nil {
		if a.failEnded(ctx) {
			return
		}
		if errors.Is(m.err, context.DeadlineExceeded) {
			a.fail(ctx, fault.Upstream(fault.ClassMCP, fault.Transient, "%w: liveness ping deadline exceeded", supervision.ErrLasUnresponsive))
			return
		}
	}
	for _, pid := range a.pingers {
		reply(ctx, pid, messages.LasPingResponse{OK: m.err == nil})
	}
	a.pingers = nil
}

// --- describe ------------------------------------------------------------

func (a *Las) describe() messages.Description {
	name := "las"
	if a.opts.server != nil {
		name = a.opts.server.Name
	}
	figures := map[string]any{
		"tool_count":          len(a.tools),
		"restarts":            a.h.restarts,
		"last_restart_reason": a.h.lastReason,
	}
	if a.opts.server != nil && a.opts.server.URL != "" {
		figures["transport"] = "streamable-http"
	} else {
		pid := 0
		if a.sess != nil {
			pid = a.sess.PID()
		}
		figures["process_id"] = pid
	}
	return messages.Description{Kind: "las", Name: name, Status: a.phase.String(), Figures: figures}
}

// --- helpers -------------------------------------------------------------

// poster returns a function that posts a message to the actor itself,
// for the session's goroutines.
func (a *Las) poster(ctx actor.Context) func(any) {
	self, system := ctx.Self(), ctx.ActorSystem()
	return func(m any) { system.Root.Send(self, m) }
}

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

// screenTools returns tools with every secret redacted from their
// descriptions and parameter schemas, which reach the model with every
// completion and the `tools` command's output
// (docs/tools.md#the-output-boundary). Names are the catalogue's to
// refuse.
func screenTools(tools []chat.Tool, secrets *boundary.Secrets) []chat.Tool {
	if secrets.Len() == 0 {
		return tools
	}
	out := make([]chat.Tool, len(tools))
	for i, t := range tools {
		t.Function.Description = secrets.RedactString(t.Function.Description)
		t.Function.Parameters = secrets.RedactJSON(t.Function.Parameters)
		out[i] = t
	}
	return out
}

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
