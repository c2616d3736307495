package family

import (
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// Activate asks a placed family (Options.Placed) to start the being
// living in Dir, whose lock its member took: the root (Dir is the
// root's StateDir) or a child named as its state says. The being runs
// with the root's options in Placement, which fences it under its own
// lock and leaves its children to the members.
type Activate struct {
	Dir                     string
	Name, Ticker, Specialty string
	Placement               being.Placement
}

// Release asks a placed family to stop the being living in Dir at its
// next round boundary (Now: at once); its end is reported as
// messages.BeingReleased, as every placed being's is.
type Release struct {
	Dir string
	Now bool
	// ForGood stops the being for good: its children first, wherever
	// they run (messages.StopBeing.Subtree).
	ForGood bool
}

// SubtreeDone tells the being living in Dir, which stops for good, that
// every child of its messages.SubtreeStopping has ended.
type SubtreeDone struct {
	Dir string
}

// subtreeDone passes SubtreeDone on to its being.
func (f *Family) subtreeDone(ctx actor.Context, msg SubtreeDone) {
	if p := f.beings[filepath.Clean(msg.Dir)]; p != nil {
		ctx.Send(p.pid, messages.SubtreeStopped{})
	}
}

// relay hands a relative's message to its receiver when this family
// runs it, the answer going to the sender; otherwise Options.Relay
// carries it to the member that runs it, on a goroutine of its own, or,
// without one, it answers messages.MessageNotHere, and the sender tries
// again later (docs/cluster.md#messages-between-relatives).
func (f *Family) relay(ctx actor.Context, msg messages.RelayMessage) {
	if p := f.beings[filepath.Clean(msg.Dir)]; p != nil {
		ctx.RequestWithCustomSender(p.pid, msg.Request, ctx.Sender())
		return
	}
	sender := ctx.Sender()
	if f.opts.Relay == nil || sender == nil {
		ctx.Respond(messages.MessageNotHere{})
		return
	}
	root, carry := ctx.ActorSystem().Root, f.opts.Relay
	go func() { root.Send(sender, carry(msg.Dir, msg.Request, relayLimit)) }()
}

// relayLimit bounds how long a relay to another member takes: within
// the sender's wait for an answer.
const relayLimit = 8 * time.Second

// placed is a being a placed family runs.
type placed struct {
	dir string
	pid *actor.PID
}

// activate starts the being msg asks for, unless it runs already.
func (f *Family) activate(ctx actor.Context, msg Activate) {
	dir := filepath.Clean(msg.Dir)
	if f.beings[dir] != nil {
		return
	}
	if f.stopping || f.gateway == nil {
		f.emit(ctx, messages.BeingReleased{Dir: dir, Status: state.StatusStopped})
		return
	}
	opts := f.opts.Root
	if dir != filepath.Clean(opts.StateDir) {
		opts = opts.Child(dir, msg.Name, msg.Ticker, msg.Specialty)
	}
	opts.Mode = being.Run
	opts.Placement = msg.Placement
	opts.Gateway = f.gateway
	if f.limits != nil {
		opts.SpendLimiter = f.limits
	}
	pid, err := ctx.SpawnNamed(being.Props(opts), placedName(dir))
	if err != nil {
		f.emit(ctx, messages.BeingReleased{Dir: dir, Status: state.StatusFailed, Err: fault.Errorf(fault.ClassRuntime, "spawn being: %w", err)})
		return
	}
	f.beings[dir] = &placed{dir: dir, pid: pid}
}

// placedName is a placed being's actor name: its directory's name.
func placedName(dir string) string { return "being-" + filepath.Base(dir) }

// PlacedName is the actor name, under the family, of the being living
// in dir on the member that holds it (a family spread over members).
func PlacedName(dir string) string { return placedName(dir) }

// release asks the being living in msg.Dir to stop.
func (f *Family) release(ctx actor.Context, msg Release) {
	if p := f.beings[filepath.Clean(msg.Dir)]; p != nil {
		ctx.Send(p.pid, messages.StopBeing{Now: msg.Now, Subtree: msg.ForGood})
	}
}

// placedStopped reports a placed being's end and stops its actor; the
// family's own end comes once its last being ended after a shutdown.
func (f *Family) placedStopped(ctx actor.Context, msg messages.BeingStopped) {
	for dir, p := range f.beings {
		if filepath.Base(dir) != msg.ID {
			continue
		}
		delete(f.beings, dir)
		ctx.Stop(p.pid)
		f.emit(ctx, messages.BeingReleased{Dir: dir, Status: msg.Status, Err: msg.Err})
	}
	f.finishWhenEmpty(ctx)
}

// placedTerminated reports a placed being whose actor ended without its
// BeingStopped (its supervisor stopped it on a failure).
func (f *Family) placedTerminated(ctx actor.Context, who *actor.PID) bool {
	for dir, p := range f.beings {
		if p.pid.Equal(who) {
			delete(f.beings, dir)
			f.emit(ctx, messages.BeingReleased{Dir: dir, Status: state.StatusFailed, Err: fault.New(fault.ClassRuntime, "being stopped unexpectedly")})
			f.finishWhenEmpty(ctx)
			return true
		}
	}
	return false
}

// finishWhenEmpty ends a stopping family once it runs no being.
func (f *Family) finishWhenEmpty(ctx actor.Context) {
	if !f.stopping || f.root != nil || len(f.beings) > 0 {
		return
	}
	stopped := messages.FamilyStopped{Status: state.StatusStopped}
	if f.failure != nil {
		stopped = messages.FamilyStopped{Status: state.StatusFailed, Err: f.failure}
	}
	f.finish(ctx, stopped)
}
