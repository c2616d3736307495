package being

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// startLas spawns the being's Las actor and asks for its catalogue; the
// first cycle starts once it is known. Without Las options the being lives
// on built-in tools alone; a dormant being (exhausted or failed, loaded
// only for the tree) never starts a Las process.
func (b *Being) startLas(ctx actor.Context) {
	if b.opts.Las == nil || b.opts.Mode == Dormant {
		b.las.link = lasAbsent
		b.afterLasReady(ctx)
		return
	}
	opts := b.opts.Las.ForBeing(b.perBeing().Expand)
	opts.BeingName = b.st.Identity.Name
	opts.AgentID = b.st.Identity.AgentID
	opts.Logger = b.opts.Logger
	pid, err := ctx.SpawnNamed(las.Props(opts), supervision.LasChildName)
	if err != nil {
		b.failStart(ctx, fault.Errorf(fault.ClassMCP, "cannot start Las: %w", err))
		return
	}
	b.las.pid = pid
	b.las.link = lasStarting
	if b.opts.Observer != nil {
		b.opts.Observer.LasStarted(b.me, "las")
	}
	b.request(ctx, pid, messages.LasCatalogRequest{}, b.lasBootTimeout(), replyLasCatalog)
}

// perBeing are the being's per-being values of a servers file
// (docs/las.md#per-being-values): its state directory and workspace,
// absolute, and its id, the state directory's name.
func (b *Being) perBeing() config.BeingValues {
	return config.BeingValues{Dir: absPath(b.opts.StateDir), ID: filepath.Base(b.opts.StateDir), Workspace: absPath(b.opts.Workspace)}
}

// absPath is path made absolute, or as given when it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// lasCatalogAnswered takes Las's boot catalogue.
func (b *Being) lasCatalogAnswered(ctx actor.Context, r reply) {
	resp, ok := r.res.(messages.LasCatalogResponse)
	switch {
	case b.phase != phaseBooting:
		// Stopped while Las was starting: the shutdown goes on.
		b.continueShutdown(ctx)
	case r.err != nil || !ok:
		// Not ready within the boot wait (docs/las.md#las-at-boot): Las
		// keeps trying and its tools join when it is ready.
		b.lasNotReady(ctx)
	case !resp.Available && errors.Is(resp.Err, las.ErrIntensityExceeded):
		// Its LasUnavailable follows and decides (handleLasEvent).
	case !resp.Available:
		b.las.link = lasLost
		b.failStart(ctx, resp.Err)
	default:
		b.las.tools = resp.Tools
		b.las.link = lasUp
		b.afterLasReady(ctx)
	}
}

func (b *Being) lasBootTimeout() time.Duration {
	return b.opts.MCPTimeout*2 + askTimeout
}

// afterLasReady builds the boot catalogue (a registration failure ends
// the being, exit 5), then writes the boot step and starts the first
// cycle. Every boot check has passed by then: the boot step is the
// being's first durable write (docs/state.md#boot-gates).
func (b *Being) afterLasReady(ctx actor.Context) {
	if err := b.rebuildCatalog(); err != nil {
		b.failStart(ctx, err)
		return
	}
	if b.opts.Mode == Dormant {
		b.phase = phaseIdle
		b.sendParent(ctx, messages.BeingStarted{Dir: b.opts.StateDir})
		b.resumeChildren(ctx)
		if b.opts.placement().ChildrenElsewhere() {
			// Nothing keeps an ended being of a spread family: it stops,
			// and its member records its end.
			b.handleStop(ctx, messages.StopBeing{})
		}
		return
	}
	if b.engine.Opened() {
		b.commitBoot(ctx)
		return
	}
	// A fresh being: its directory and first state.json come now, from
	// a copy (the writer encodes it while the actor goes on).
	snapshot := *b.st
	b.onDurable(ctx, b.engine.Create(nextNothing, b.opts.StateDir, &snapshot))
}

// created boots a fresh being whose directory is written.
func (b *Being) created(ctx actor.Context, ev durable.Created) {
	if ev.Err != nil {
		b.failStart(ctx, ev.Err)
		return
	}
	b.commitBoot(ctx)
}

// commitBoot journals started (with the warnings of the load) and writes
// a checkpoint (resume, nextBootStep); then the being lives.
func (b *Being) commitBoot(ctx actor.Context) {
	b.commit(ctx, []state.Event{state.Started(b.opts.now())}, nextBootStep)
}

// bootDurable follows the boot checkpoint: the boot step is durable, the
// family is repaired, and the being lives. A being stopped meanwhile
// goes on with its shutdown instead.
func (b *Being) bootDurable(ctx actor.Context) {
	b.booted = true
	b.sendParent(ctx, messages.BeingStarted{Dir: b.opts.StateDir})
	if b.phase != phaseBooting {
		return
	}
	b.repairFamily(ctx)
}

// familyRepaired starts living: the children resume, the first cycle
// begins (once the sleep it loaded in ends).
func (b *Being) familyRepaired(ctx actor.Context) {
	if b.phase != phaseBooting {
		return // stopped meanwhile: the shutdown goes on
	}
	b.phase = phaseIdle
	b.resumeChildren(ctx)
	b.deliverOutbox(ctx)
	b.firstTick(ctx)
}

// handleLasEvent follows what the Las actor reports about itself.
func (b *Being) handleLasEvent(ctx actor.Context, msg any) {
	switch e := msg.(type) {
	case messages.LasCatalogChanged:
		b.las.tools = e.Tools
		if b.las.link == lasStarting && b.phase != phaseBooting {
			b.las.link = lasUp // a Las that was late at boot is ready now
		}
		if b.las.link != lasUp {
			return // the boot catalogue is built from these tools when it is
		}
		if err := b.rebuildCatalog(); err != nil {
			b.warn("Las catalogue refused, keeping the previous one: " + err.Error())
		}
	case messages.LasRestarted:
		b.log.Warn("Las restarted", "restarts", e.Restarts, "reason", e.Reason)
		b.las.reason = e.Reason
		if b.opts.Observer != nil {
			b.opts.Observer.LasRestarted(b.me, "las")
		}
	case messages.LasSurfaceMissing:
		b.warn(e.String())
	case messages.LasWarning:
		b.warn(e.Text)
	case messages.LasUnavailable:
		if b.stop != nil {
			return // a Las stopped by our own shutdown
		}
		if b.phase == phaseBooting {
			// Las gave up before the boot catalogue was known: the ask
			// for it will never be answered.
			b.epoch++
			if e.Reason == supervision.ReasonIntensityExceeded && b.opts.placement().ChildrenElsewhere() {
				// A being of a spread family does not start without its
				// Las (a takeover starts many at once): nothing is
				// written yet, and its member tries it again after a
				// wait, here or on another member
				// (docs/cluster.md#beings-spread-over-members).
				b.failStart(ctx, fault.New(fault.ClassMCP, "Las did not start ("+e.Reason+"): the being's member tries it again after a wait"))
				return
			}
			if e.Reason == supervision.ReasonIntensityExceeded {
				// Restarted past the intensity at boot
				// (docs/las.md#las-at-boot): built-in tools only, unless
				// surfaces are required.
				if err := b.requiredSurfaceError(); err != nil {
					b.failStart(ctx, err)
					return
				}
				b.lasEnded(e.String())
				b.afterLasReady(ctx)
				return
			}
			err := e.Err
			if err == nil {
				err = fault.New(fault.ClassMCP, e.String())
			}
			b.failStart(ctx, err)
			return
		}
		b.lasEnded(e.String())
	}
}

// lasEnded switches the being to built-in tools only
// (docs/las.md#las-unavailable). The reason, when given, is journaled once: the
// Las actor's LasUnavailable carries it, while its termination (which usually
// overtakes it) does not.
func (b *Being) lasEnded(reason string) {
	offered := b.las.link == lasUp
	switch {
	case reason != "" && b.las.link != lasGone:
		b.las.link = lasGone
		b.warn(reason)
	case reason == "" && (b.las.link == lasUp || b.las.link == lasStarting):
		b.las.link = lasLost
	}
	if offered {
		if err := b.rebuildCatalog(); err != nil {
			b.log.Error("catalogue without Las", "err", err)
		}
	}
}

// lasNotReady goes on without a Las that did not become ready within the
// boot wait (docs/las.md#las-at-boot): with required surfaces the boot
// fails; without, the being lives on built-in tools, warned, and the Las
// tools join the catalogue when Las is ready.
func (b *Being) lasNotReady(ctx actor.Context) {
	if err := b.requiredSurfaceError(); err != nil {
		b.failStart(ctx, err)
		return
	}
	why := b.las.reason
	if why == "" {
		why = "no answer"
	}
	b.warn("Las not ready at boot, going on with built-in tools: " + why)
	b.afterLasReady(ctx)
}

// requiredSurfaceError is the boot failure of a being whose Las is not
// available while surfaces are required: "mcp: required Las surface
// unavailable: <first>", or nil when none is required.
func (b *Being) requiredSurfaceError() error {
	if b.opts.Las == nil || len(b.opts.Las.RequiredSurfaces) == 0 {
		return nil
	}
	return fault.Upstream(fault.ClassMCP, fault.Permanent, "required Las surface unavailable: %s", b.opts.Las.RequiredSurfaces[0])
}
