package las

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/mailbox"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// SurfaceSeparator joins a server's name and its tool's name.
const SurfaceSeparator = "__"

// groupBootExpired is the group's boot deadline passing.
type groupBootExpired struct{}

type memberState int

const (
	memberStarting memberState = iota
	memberUp
	memberGone
)

// member is one server of the servers file and its Las actor.
type member struct {
	server     Server
	pid        *actor.PID
	state      memberState
	tools      []chat.Tool     // prefixed "<server>__<tool>", in server order
	names      map[string]bool // the server's own tool names
	restarts   int
	lastReason string
}

// Group is the actor of a servers file (docs/las.md#several-mcp-servers). It
// stands where the single Las actor stands and answers the same messages;
// under it each server is its own Las actor, named after the server,
// spawned, handshaken, restarted and given up on by its own supervision
// (supervision.LasPolicy per server), so one server failing never
// restarts another.
//
// Its catalogue is the servers' tools, each named "<server>__<tool>", in
// file order. At boot it answers once every server is up or has given up,
// or when Options.BootTimeout passes (late servers join when they come
// up); the required surfaces are checked then, over the whole
// catalogue, and a missing one fails the boot permanently. A server that
// gives up later is a warning: its tools leave the catalogue (and fail
// as unknown_tool), the others stay.
type Group struct {
	opts      Options
	log       *slog.Logger
	members   []*member
	byName    map[string]*member
	booted    bool
	failure   error // a boot that failed for good
	catalogs  []*actor.PID
	bootTimer func() bool
}

var _ actor.Actor = (*Group)(nil)

// selectServers applies LAS_ONLY and LAS_SKIP to the servers by name
// (docs/las.md#several-mcp-servers). LAS_ONLY at its default (the classic
// surface list) or empty selects every server.
func selectServers(servers []Server, only, skip *string) []Server {
	var keep, drop []string
	if only != nil && *only != DefaultOnly {
		keep = splitList(*only)
	}
	if skip != nil {
		drop = splitList(*skip)
	}
	var out []Server
	for _, s := range servers {
		if (len(keep) == 0 || slices.Contains(keep, s.Name)) && !slices.Contains(drop, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// Selected are the servers of opts that LAS_ONLY and LAS_SKIP select,
// in file order: those a being starts.
func (o Options) Selected() []Server { return selectServers(o.Servers, o.Only, o.Skip) }

func groupProps(opts Options) *actor.Props {
	servers := selectServers(opts.Servers, opts.Only, opts.Skip)
	cfg := opts.Supervision
	var strategyOpts []supervision.Option
	if cfg.Clock != nil {
		strategyOpts = append(strategyOpts, supervision.WithClock(cfg.Clock))
	}
	if cfg.Random != nil {
		strategyOpts = append(strategyOpts, supervision.WithRandom(cfg.Random))
	}
	// Every child of the group is a server's Las.
	strategy := supervision.NewStrategy([]supervision.Route{{Policy: supervision.LasPolicy(cfg)}}, strategyOpts...)
	opts.Servers = servers
	return actor.PropsFromProducer(func() actor.Actor {
		return &Group{opts: opts, log: opts.Logger.With("actor", "las", "being", opts.BeingName, "agent_id", opts.AgentID), byName: map[string]*member{}}
	}, actor.WithSupervisor(strategy), actor.WithDispatcher(mailbox.Shared))
}

// Receive dispatches one message.
func (g *Group) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		g.handleStarted(ctx)
	case *actor.Stopping:
		g.handleStopping(ctx)
	case messages.LasCatalogChanged:
		g.handleMemberCatalog(ctx, m)
	case messages.LasUnavailable:
		g.handleMemberGone(ctx, m)
	case messages.LasRestarted:
		g.handleMemberRestarted(ctx, m)
	case messages.LasWarning:
		if mb := g.sender(ctx); mb != nil {
			g.warn(ctx, "Las "+mb.server.Name+": "+m.Text)
		}
	case messages.LasCallRequest:
		g.handleCall(ctx, m)
	case messages.LasCatalogRequest:
		g.handleCatalog(ctx)
	case messages.LasPingRequest:
		g.handlePing(ctx)
	case messages.DescribeRequest:
		ctx.Respond(g.describe())
	case groupBootExpired:
		g.handleBootExpired(ctx)
	}
}

func (g *Group) handleStarted(ctx actor.Context) {
	for _, s := range g.opts.Servers {
		mo := g.opts
		mo.Servers, mo.RequiredSurfaces = nil, nil
		srv := s
		mo.server = &srv
		pid, err := ctx.SpawnNamed(Props(mo), s.Name)
		if err != nil {
			g.failBoot(ctx, fault.Upstream(fault.ClassMCP, fault.Permanent, "cannot start Las %s: %w", s.Name, err))
			return
		}
		m := &member{server: s, pid: pid}
		g.members = append(g.members, m)
		g.byName[s.Name] = m
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	g.bootTimer = time.AfterFunc(g.opts.BootTimeout, func() { system.Root.Send(self, groupBootExpired{}) }).Stop
	g.checkBoot(ctx)
}

func (g *Group) handleStopping(ctx actor.Context) {
	if g.bootTimer != nil {
		g.bootTimer()
	}
	resp := messages.LasCatalogResponse{Available: false, Err: fault.Upstream(fault.ClassMCP, fault.Permanent, "Las is unavailable")}
	if g.failure != nil {
		resp.Err = g.failure
	}
	for _, pid := range g.catalogs {
		ctx.Send(pid, resp)
	}
	g.catalogs = nil
}

// sender is the member that sent the current message, or nil.
func (g *Group) sender(ctx actor.Context) *member {
	from := ctx.Sender()
	if from == nil {
		return nil
	}
	for _, m := range g.members {
		if m.pid.Equal(from) {
			return m
		}
	}
	return nil
}

func (g *Group) handleMemberCatalog(ctx actor.Context, e messages.LasCatalogChanged) {
	m := g.sender(ctx)
	if m == nil || m.state == memberGone {
		return
	}
	m.state = memberUp
	m.names = make(map[string]bool, len(e.Tools))
	m.tools = make([]chat.Tool, 0, len(e.Tools))
	for _, t := range e.Tools {
		m.names[t.Function.Name] = true
		m.tools = append(m.tools, chat.NewTool(m.server.Name+SurfaceSeparator+t.Function.Name, t.Function.Description, t.Function.Parameters))
	}
	if g.booted {
		g.announce(ctx)
		return
	}
	g.checkBoot(ctx)
}

func (g *Group) handleMemberGone(ctx actor.Context, e messages.LasUnavailable) {
	m := g.sender(ctx)
	if m == nil || m.state == memberGone {
		return
	}
	m.state, m.tools, m.names = memberGone, nil, nil
	if !g.booted && e.Reason != supervision.ReasonIntensityExceeded && e.Err != nil {
		// A permanent failure at boot (it cannot start, a protocol
		// mismatch) is a configuration to fix: the boot fails with it.
		g.failBoot(ctx, e.Err)
		return
	}
	g.warn(ctx, fmt.Sprintf("Las %s unavailable: %s", m.server.Name, e.Reason))
	if g.booted {
		g.announce(ctx)
		return
	}
	g.checkBoot(ctx)
}

func (g *Group) handleMemberRestarted(ctx actor.Context, e messages.LasRestarted) {
	m := g.sender(ctx)
	if m == nil {
		return
	}
	m.restarts, m.lastReason = e.Restarts, e.Reason
	g.tell(ctx, messages.LasRestarted{Restarts: g.restarts(), Reason: m.server.Name + ": " + e.Reason})
}

// handleBootExpired settles the boot with the servers that are up; the
// late ones keep starting and join the catalogue when they are ready.
func (g *Group) handleBootExpired(ctx actor.Context) {
	if g.booted || g.failure != nil {
		return
	}
	for _, m := range g.members {
		if m.state == memberStarting {
			why := m.lastReason
			if why == "" {
				why = "no answer yet"
			}
			g.warn(ctx, fmt.Sprintf("Las %s not ready at boot, going on without it for now: %s", m.server.Name, why))
		}
	}
	g.settle(ctx)
}

// checkBoot settles the boot once no server is still starting.
func (g *Group) checkBoot(ctx actor.Context) {
	if g.booted || g.failure != nil {
		return
	}
	for _, m := range g.members {
		if m.state == memberStarting {
			return
		}
	}
	g.settle(ctx)
}

// settle ends the boot: the required surfaces are checked over the whole
// catalogue (docs/las.md#las-at-boot).
func (g *Group) settle(ctx actor.Context) {
	if g.bootTimer != nil {
		g.bootTimer()
		g.bootTimer = nil
	}
	tools := g.tools()
	if missing := missingSurface(tools, g.opts.RequiredSurfaces); missing != "" {
		g.failBoot(ctx, fault.Upstream(fault.ClassMCP, fault.Permanent, "required Las surface unavailable: %s", missing))
		return
	}
	g.booted = true
	g.log.Info("Las servers ready", "servers", len(g.members), "tools", len(tools))
	for _, pid := range g.catalogs {
		ctx.Send(pid, messages.LasCatalogResponse{Tools: tools, Available: true})
	}
	g.catalogs = nil
	g.tell(ctx, messages.LasCatalogChanged{Tools: tools})
}

// failBoot answers the waiters and tells the parent: the boot has failed
// for good with err.
func (g *Group) failBoot(ctx actor.Context, err error) {
	if g.failure != nil {
		return
	}
	g.failure = err
	g.log.Warn("Las servers failed at boot", "error", g.opts.Secrets.RedactString(err.Error()))
	for _, pid := range g.catalogs {
		ctx.Send(pid, messages.LasCatalogResponse{Available: false, Err: err})
	}
	g.catalogs = nil
	reason := strings.TrimPrefix(err.Error(), fault.ClassMCP.Prefix()+": ")
	g.tell(ctx, messages.LasUnavailable{Reason: reason, Err: err})
}

// announce tells the parent the catalogue after a server's change.
func (g *Group) announce(ctx actor.Context) {
	g.tell(ctx, messages.LasCatalogChanged{Tools: g.tools()})
}

// tools is the catalogue of the servers that are up, in file order.
func (g *Group) tools() []chat.Tool {
	var out []chat.Tool
	for _, m := range g.members {
		if m.state == memberUp {
			out = append(out, m.tools...)
		}
	}
	return out
}

func (g *Group) restarts() int {
	n := 0
	for _, m := range g.members {
		n += m.restarts
	}
	return n
}

// handleCall routes "<server>__<tool>" to the server's Las as "<tool>";
// the server answers the caller directly.
func (g *Group) handleCall(ctx actor.Context, req messages.LasCallRequest) {
	name, tool, ok := strings.Cut(req.Tool, SurfaceSeparator)
	m := g.byName[name]
	if !ok || m == nil || m.state == memberGone || (m.state == memberUp && !m.names[tool]) {
		ctx.Respond(messages.LasCallResponse{Outcome: outcome.Failure("unknown_tool", msgUnknownTool)})
		return
	}
	req.Tool = tool
	ctx.RequestWithCustomSender(m.pid, req, ctx.Sender())
}

func (g *Group) handleCatalog(ctx actor.Context) {
	switch {
	case g.failure != nil:
		ctx.Respond(messages.LasCatalogResponse{Available: false, Err: g.failure})
	case !g.booted:
		if s := ctx.Sender(); s != nil {
			g.catalogs = append(g.catalogs, s)
		}
	default:
		ctx.Respond(messages.LasCatalogResponse{Tools: g.tools(), Available: true})
	}
}

// handlePing pings every server that is up; the answer is OK when all
// of them answered.
func (g *Group) handlePing(ctx actor.Context) {
	sender, system := ctx.Sender(), ctx.ActorSystem()
	var futures []*actor.Future
	for _, m := range g.members {
		if m.state == memberUp {
			futures = append(futures, system.Root.RequestFuture(m.pid, messages.LasPingRequest{}, g.opts.PingTimeout+time.Second))
		}
	}
	if sender == nil {
		return
	}
	go func() {
		ok := len(futures) > 0
		for _, f := range futures {
			res, err := f.Result()
			if r, isPing := res.(messages.LasPingResponse); err != nil || !isPing || !r.OK {
				ok = false
			}
		}
		system.Root.Send(sender, messages.LasPingResponse{OK: ok})
	}()
}

func (g *Group) describe() messages.Description {
	up := 0
	children := make([]*actor.PID, 0, len(g.members))
	last := ""
	for _, m := range g.members {
		if m.state == memberUp {
			up++
		}
		if m.lastReason != "" {
			last = m.server.Name + ": " + m.lastReason
		}
		children = append(children, m.pid)
	}
	status := "starting"
	switch {
	case g.failure != nil:
		status = "failed"
	case g.booted:
		status = "running"
	}
	return messages.Description{
		Kind:   "las",
		Name:   "las",
		Status: status,
		Figures: map[string]any{
			"servers":             len(g.members),
			"servers_up":          up,
			"tool_count":          len(g.tools()),
			"restarts":            g.restarts(),
			"last_restart_reason": last,
		},
		Children: children,
	}
}

func (g *Group) warn(ctx actor.Context, text string) {
	text = g.opts.Secrets.RedactString(text)
	g.log.Warn(text)
	g.tell(ctx, messages.LasWarning{Text: text})
}

func (g *Group) tell(ctx actor.Context, msg any) {
	if parent := ctx.Parent(); parent != nil {
		ctx.Send(parent, msg)
	}
}
