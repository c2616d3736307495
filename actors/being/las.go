package being

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/las"
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
		b.link = lasAbsent
		b.afterLasReady(ctx)
		return
	}
	opts := *b.opts.Las
	opts.BeingName = b.st.Identity.Name
	opts.AgentID = b.st.Identity.AgentID
	opts.Logger = b.opts.Logger
	pid, err := ctx.SpawnNamed(las.Props(opts), supervision.LasChildName)
	if err != nil {
		b.failStart(ctx, fault.Errorf(fault.ClassMCP, "cannot start Las: %w", err))
		return
	}
	b.las = pid
	b.link = lasStarting
	b.ask(ctx, pid, messages.LasCatalogRequest{}, b.lasBootTimeout(), func(res any, err error) {
		resp, ok := res.(messages.LasCatalogResponse)
		switch {
		case b.phase != phaseBooting:
			// Stopped while Las was starting: the shutdown goes on.
			b.continueShutdown(ctx)
		case err != nil || !ok:
			// Not ready within the boot wait (docs/las.md#las-at-boot): Las
			// keeps trying and its tools join when it is ready.
			b.lasNotReady(ctx)
		case !resp.Available && errors.Is(resp.Err, las.ErrIntensityExceeded):
			// Its LasUnavailable follows and decides (handleLasEvent).
		case !resp.Available:
			b.link = lasLost
			b.failStart(ctx, resp.Err)
		default:
			b.lasTools = resp.Tools
			b.link = lasUp
			b.afterLasReady(ctx)
		}
	})
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
		b.resumeChildren(ctx)
		return
	}
	if b.journal != nil {
		b.commitBoot(ctx)
		return
	}
	// A fresh being: its directory and first state.json come now, from
	// a copy (the writer encodes it while the actor goes on).
	snapshot := *b.st
	fresh, fault := &snapshot, b.opts.StorageFault
	var opened *openedState
	b.onWriter(ctx, func() error {
		var err error
		opened, err = createState(b.opts.StateDir, fresh, fault)
		return err
	}, func(err error) {
		if err != nil {
			b.failStart(ctx, err)
			return
		}
		b.store, b.journal, b.archive = opened.store, opened.journal, opened.archive
		b.commitBoot(ctx)
	})
}

// commitBoot journals started (with the warnings of the load) and writes
// a checkpoint; then the being lives.
func (b *Being) commitBoot(ctx actor.Context) {
	b.commit(ctx, []state.Event{state.Started(b.opts.now())}, func(ctx actor.Context) {
		b.st.Status = state.StatusRunning // durable with the boot checkpoint
		b.writeCheckpoint(ctx, func(ctx actor.Context) {
			b.booted = true
			if b.phase != phaseBooting {
				return // stopped meanwhile: the shutdown goes on
			}
			b.repairFamily(ctx, func(ctx actor.Context) {
				if b.phase != phaseBooting {
					return // stopped meanwhile: the shutdown goes on
				}
				b.phase = phaseIdle
				b.resumeChildren(ctx)
				ctx.Send(ctx.Self(), tick{b.epoch})
			})
		})
	})
}

// repairFamily finishes what a crash left between a grant and its
// child (completeGrants, removeUngranted) before the children resume.
func (b *Being) repairFamily(ctx actor.Context, then func(ctx actor.Context)) {
	if len(b.st.Grants) == 0 && b.opts.Fresh != nil {
		then(ctx)
		return
	}
	pending := append([]state.Grant(nil), b.st.Grants...)
	b.removeUngranted(ctx, func(ctx actor.Context) {
		b.completeGrants(ctx, pending, then)
	})
}

// openedState is a fresh being's state directory, once written.
type openedState struct {
	store   *state.Store
	journal *state.Journal
	archive *state.Archive
}

// createState writes a fresh being's directory and first state.json and
// opens its journal and archive; it runs on a writer goroutine.
func createState(dir string, fresh *state.Being, fault state.Fault) (*openedState, error) {
	store, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	store.SetFault(fault)
	if fault != nil {
		if err := fault(state.StateFile); err != nil {
			return nil, err
		}
	}
	if err := store.Create(fresh); err != nil {
		return nil, err
	}
	journal, err := store.OpenJournal(fresh.StartedAt, 0)
	if err != nil {
		return nil, err
	}
	archive, err := store.OpenArchive()
	if err != nil {
		journal.Close()
		return nil, err
	}
	return &openedState{store: store, journal: journal, archive: archive}, nil
}

// handleLasEvent follows what the Las actor reports about itself.
func (b *Being) handleLasEvent(ctx actor.Context, msg any) {
	switch e := msg.(type) {
	case messages.LasCatalogChanged:
		b.lasTools = e.Tools
		if b.link == lasStarting && b.phase != phaseBooting {
			b.link = lasUp // a Las that was late at boot is ready now
		}
		if b.link != lasUp {
			return // the boot catalogue is built from these tools when it is
		}
		if err := b.rebuildCatalog(); err != nil {
			b.warn("Las catalogue refused, keeping the previous one: " + err.Error())
		}
	case messages.LasRestarted:
		b.log.Warn("Las restarted", "restarts", e.Restarts, "reason", e.Reason)
		b.lasReason = e.Reason
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
	offered := b.link == lasUp
	switch {
	case reason != "" && b.link != lasGone:
		b.link = lasGone
		b.warn(reason)
	case reason == "" && (b.link == lasUp || b.link == lasStarting):
		b.link = lasLost
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
	why := b.lasReason
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
