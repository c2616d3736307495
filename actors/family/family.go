// Package family is the root of the actor tree
// (docs/concepts.md#the-actor-tree): it owns the process lifetime, the brama
// gateway and the root being, and reports what the command line waits for (a
// cycle report, the end of the family) on a channel. The debug endpoint is
// started beside it by the command.
package family

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/limits"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// Options configure the family.
type Options struct {
	// Gateway configures the shared brama actor.
	Gateway brama.GatewayConfig
	// Root configures the root being; its Gateway field is filled in by
	// the family.
	Root being.Options
	// Listener is sent, in order, every messages.CycleReport of the
	// family's beings and finally one messages.FamilyStopped; a placed
	// family also sends it messages.BeingReleased and
	// messages.SubtreeStopping (its member's placer). Sending never
	// blocks the family. Nil sends nothing.
	Listener *actor.PID
	Logger   *slog.Logger
	// SpendLimits starts the family's spend limiter, which admits every
	// being's completion reservations (docs/money.md#spend-limits);
	// FamilySpendLimit is the family's limit per rolling hour (nil for
	// none; a being's own limit is in its options). Now is the
	// limiter's clock; nil means time.Now.
	SpendLimits      bool
	FamilySpendLimit *money.Amount
	Now              func() time.Time
	// LimiterProps, when set, is the limiter spawned instead of the
	// family's own: on a member of a family spread over members, the
	// proxy of the family's one limiter (limits.ProxyProps).
	LimiterProps *actor.Props
	// Member and Token, when set, are the member of a family across
	// processes that holds this family and its lock's fencing token
	// (docs/cluster.md#placement); the description shows them.
	Member string
	Token  uint64
	// Relay carries a relative's message to a being this placed family
	// does not run, within limit: to the member that holds it
	// (docs/cluster.md#messages-between-relatives). It answers with what
	// the receiver answered (messages.MessageResponse), or
	// messages.MessageNotHere when no member runs it. It is called on a
	// goroutine of its own. Nil answers MessageNotHere.
	Relay func(dir string, req messages.MessageRequest, limit time.Duration) any
	// Placed starts the family with no root being of its own: it is
	// one member's part of a family spread over members
	// (docs/cluster.md#placement) and runs the beings its member
	// activates (Activate), each reported as messages.BeingReleased once
	// it ended. It is read at the start only: the family runs whatever
	// beings it has alike, ShutdownFamily stops them all, and
	// FamilyStopped comes once they have (the root's end, when it has
	// a root, is the family's).
	Placed bool
}

// Family is the root actor.
type Family struct {
	opts    Options
	log     *slog.Logger
	gateway *actor.PID
	limits  *actor.PID
	root    *actor.PID
	// beings are the placed beings running, by directory (Placed).
	beings map[string]*placed
	// stopping is set once the root being was asked to stop.
	stopping bool
	done     bool
	// failure ends the family as failed whatever the root reports: the
	// gateway stopped under a living family.
	failure error
}

var _ actor.Actor = (*Family)(nil)

// Props returns the family's props. The family does not restart its
// children: a failing gateway or root being ends the family.
func Props(opts Options) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return New(opts) },
		actor.WithSupervisor(supervision.StopOnFailure()))
}

// New returns the family actor.
func New(opts Options) *Family {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Family{opts: opts, log: log, beings: map[string]*placed{}}
}

// RootName is the actor name of the root being.
const RootName = "root"

// Receive dispatches one message.
func (f *Family) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		f.handleStarted(ctx)
	case *actor.Terminated:
		f.handleTerminated(ctx, msg)
	case messages.ShutdownFamily:
		f.handleShutdown(ctx, msg)
	case messages.CycleReport:
		f.emit(ctx, msg)
	case messages.BeingStopped:
		f.handleBeingStopped(ctx, msg)
	case Activate:
		f.activate(ctx, msg)
	case messages.RelayMessage:
		f.relay(ctx, msg)
	case Release:
		f.release(ctx, msg)
	case messages.SubtreeStopping:
		f.emit(ctx, msg) // its member has the being's children stop
	case messages.BeingStarted:
		f.emit(ctx, msg) // its member starts the next of a takeover
	case SubtreeDone:
		f.subtreeDone(ctx, msg)
	case messages.DescribeRequest:
		ctx.Respond(f.describe())
	}
}

func (f *Family) handleStarted(ctx actor.Context) {
	gw, err := ctx.SpawnNamed(brama.Props(f.opts.Gateway), "brama")
	if err != nil {
		f.finish(ctx, messages.FamilyStopped{Status: "failed", Err: fault.Errorf(fault.ClassRuntime, "spawn gateway: %w", err)})
		return
	}
	f.gateway = gw
	rootOpts := f.opts.Root
	rootOpts.Gateway = gw
	if f.opts.SpendLimits {
		props := f.opts.LimiterProps
		if props == nil {
			props = limits.Props(f.opts.FamilySpendLimit, f.opts.Now)
		}
		pid, err := ctx.SpawnNamed(props, limits.Name)
		if err != nil {
			f.finish(ctx, messages.FamilyStopped{Status: "failed", Err: fault.Errorf(fault.ClassRuntime, "spawn spend limiter: %w", err)})
			return
		}
		f.limits = pid
		rootOpts.SpendLimiter = pid
	}
	if f.opts.Placed {
		return
	}
	root, err := ctx.SpawnNamed(being.Props(rootOpts), RootName)
	if err != nil {
		f.finish(ctx, messages.FamilyStopped{Status: "failed", Err: fault.Errorf(fault.ClassRuntime, "spawn root being: %w", err)})
		return
	}
	f.root = root
}

func (f *Family) handleShutdown(ctx actor.Context, msg messages.ShutdownFamily) {
	f.stopAll(ctx, msg.Now)
}

// stopAll stops every being the family runs, its root (children first)
// or the beings its member activated; the family ends once they all
// have.
func (f *Family) stopAll(ctx actor.Context, now bool) {
	f.stopping = true
	if f.root != nil {
		ctx.Send(f.root, messages.StopBeing{Now: now})
	}
	for _, p := range f.beings {
		ctx.Send(p.pid, messages.StopBeing{Now: now})
	}
	f.finishWhenEmpty(ctx)
}

// handleBeingStopped takes the end of a being the family runs: the
// root's ends the family, an activated being's is reported.
func (f *Family) handleBeingStopped(ctx actor.Context, msg messages.BeingStopped) {
	if f.root == nil {
		f.placedStopped(ctx, msg)
		return
	}
	f.handleRootStopped(ctx, msg)
}

// handleRootStopped ends the family once the root being (and so every
// child) has finished: the gateway stops last.
func (f *Family) handleRootStopped(ctx actor.Context, msg messages.BeingStopped) {
	ctx.Stop(f.root)
	f.root = nil
	stopped := messages.FamilyStopped{Status: msg.Status, Err: msg.Err}
	if f.failure != nil {
		stopped = messages.FamilyStopped{Status: state.StatusFailed, Err: f.failure}
	}
	f.finish(ctx, stopped)
}

// handleTerminated ends the family when the root being or the gateway
// stops unexpectedly (their supervisor stops them on any failure). Without
// a gateway no being can think, so the beings are stopped gracefully —
// children first, every state saved — and the family ends as failed.
func (f *Family) handleTerminated(ctx actor.Context, msg *actor.Terminated) {
	switch {
	case f.placedTerminated(ctx, msg.Who):
	case f.root != nil && msg.Who.Equal(f.root):
		f.root = nil
		f.finish(ctx, messages.FamilyStopped{Status: state.StatusFailed, Err: fault.New(fault.ClassRuntime, "root being stopped unexpectedly")})
	case f.gateway != nil && msg.Who.Equal(f.gateway):
		f.gateway = nil
		if f.done {
			return
		}
		f.failure = fault.New(fault.ClassRuntime, "brama gateway stopped unexpectedly")
		f.log.Error("brama gateway stopped; stopping the family")
		f.stopAll(ctx, false)
	}
}

func (f *Family) finish(ctx actor.Context, msg messages.FamilyStopped) {
	if f.done {
		return
	}
	f.done = true
	f.emit(ctx, msg)
	ctx.Stop(ctx.Self())
}

func (f *Family) emit(ctx actor.Context, msg any) {
	if f.opts.Listener != nil {
		ctx.Send(f.opts.Listener, msg)
	}
}

func (f *Family) describe() messages.Description {
	status := "running"
	if f.stopping {
		status = "stopping"
	}
	d := messages.Description{Kind: "family", Name: "family", Status: status}
	if f.opts.Member != "" {
		d.Figures = map[string]any{"member": f.opts.Member, "fence": f.opts.Token}
	}
	for _, pid := range []*actor.PID{f.gateway, f.limits, f.root} {
		if pid != nil {
			d.Children = append(d.Children, pid)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(f.beings)) {
		d.Children = append(d.Children, f.beings[dir].pid)
	}
	return d
}
