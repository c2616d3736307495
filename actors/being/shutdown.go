package being

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
)

// stopping is a shutdown in progress (SPEC §6.6).
type stopping struct {
	now         bool  // skip the waiting (second Ctrl-C)
	err         error // the failure that ends the being, if any
	saved       bool  // status "stopping" is durable
	lasStopping bool
	graceTimer  *time.Timer
	// abandon, when set, is why the cycle is to be abandoned at its next
	// step: it was asked while the being waited on its ledger, whose
	// answer carries money and is never dropped.
	abandon string
}

// graceExpired is sent to self when the shutdown grace has passed.
type graceExpired struct{ epoch uint64 }

// handleStop starts (or hurries) a graceful shutdown.
func (b *Being) handleStop(ctx actor.Context, msg messages.StopBeing) {
	if b.stopped {
		b.sendParent(ctx, b.stoppedMessage())
		return
	}
	if b.stop == nil {
		b.stop = &stopping{}
		if b.timer != nil {
			b.timer.Stop()
		}
	}
	if msg.Now {
		b.stop.now = true
	}
	if b.cycle == nil {
		b.continueShutdown(ctx)
		return
	}
	if b.stop.now {
		b.abandonWork(ctx, "shutdown without waiting")
		return
	}
	if b.stop.graceTimer == nil {
		self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
		b.stop.graceTimer = time.AfterFunc(b.opts.ShutdownGrace, func() { system.Root.Send(self, graceExpired{epoch}) })
	}
}

// handleGraceExpired abandons whatever the cycle still waits for.
func (b *Being) handleGraceExpired(ctx actor.Context, msg graceExpired) {
	if msg.epoch != b.epoch || b.stop == nil || b.cycle == nil {
		return
	}
	b.abandonWork(ctx, "shutdown grace expired")
}

// abandonWork drops the step in flight: its continuation is invalidated,
// a warning is journaled, and tool calls that will not run are closed
// with an outcome so the conversation stays well formed.
func (b *Being) abandonWork(ctx actor.Context, why string) {
	waiting := b.cycle.waiting
	if waiting == "ledger" {
		// A debit of a completion already paid for, or the credit of a
		// finished sale: let it land (the ledger answers at once), then
		// stop at the next step (nextTool).
		b.stop.abandon = why
		return
	}
	b.epoch++
	if waiting != "" {
		b.warn("abandoned " + waiting + " call in flight: " + why)
	}
	if b.cycle.next > 0 || len(b.cycle.calls) > 0 {
		b.closePendingCalls(waiting)
	}
	if err := b.save(); err != nil {
		b.log.Error("save at shutdown failed", "err", err)
	}
	report := b.report(ReportCompleted, nil, b.cycle.actions)
	b.cycle = nil
	if b.opts.Mode == Once {
		b.sendParent(ctx, report)
	}
	b.continueShutdown(ctx)
}

// closePendingCalls appends an outcome for the call in flight
// (indeterminate: its effect is unknown) and for each call not started.
func (b *Being) closePendingCalls(waiting string) {
	start := b.cycle.next
	if waiting == "las" || waiting == "most" || waiting == "models" || waiting == "file" {
		start = b.cycle.next - 1
	}
	for i := start; i >= 0 && i < len(b.cycle.calls); i++ {
		call := b.cycle.calls[i]
		o := outcome.Failure("not_run", "the being shut down before this call ran")
		if i == b.cycle.next-1 {
			o = outcome.Unknown("shutdown", "the being shut down while this call was in flight")
		}
		b.appendMessages(chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: o.Envelope()})
	}
	b.cycle.calls = nil
}

// stopWith starts the shutdown of a being that ends by itself: exhausted
// (err nil) or failed (a permanent Brama error, or a boot failure). A
// being that failed before its state was loaded has nothing to save and
// only tells its parent.
func (b *Being) stopWith(ctx actor.Context, err error) {
	if b.stop == nil {
		b.stop = &stopping{}
	}
	if err != nil {
		b.stop.err = err
	}
	if b.st != nil {
		b.continueShutdown(ctx)
		return
	}
	b.stopped = true
	b.sendParent(ctx, messages.BeingStopped{ID: b.childID(), Name: b.opts.Identity.Name, Status: state.StatusFailed, Err: err})
}

// continueShutdown advances the shutdown ladder as far as it can: save
// "stopping", stop the children and wait for them, stop Las and wait for
// it, then save the final status and tell the parent. It is called again
// whenever a child or Las finishes.
func (b *Being) continueShutdown(ctx actor.Context) {
	if b.stop == nil || b.cycle != nil || b.stopped {
		return
	}
	if !b.stop.saved {
		b.stop.saved = true
		if b.opts.Mode != Dormant {
			b.st.Status = state.StatusStopping
			if err := b.save(); err != nil {
				b.log.Error("save at shutdown failed", "err", err)
			}
		}
		for _, ref := range b.children {
			if ref.pid != nil && !ref.done {
				ctx.Send(ref.pid, messages.StopBeing{Now: b.stop.now})
			}
		}
	}
	for _, ref := range b.children {
		if ref.pid != nil && !ref.done {
			return
		}
	}
	if b.las != nil {
		if !b.stop.lasStopping {
			b.stop.lasStopping = true
			ctx.Stop(b.las)
		}
		return
	}
	b.finalSave(ctx)
}

// finalSave persists the final status (a dormant being's is left as it
// was), journals stopped and tells the parent.
func (b *Being) finalSave(ctx actor.Context) {
	switch {
	case b.opts.Mode == Dormant:
		// An exhausted or failed being loaded only for the tree keeps its
		// status, so the next resume leaves it dormant again.
	case b.stop.err != nil:
		b.st.Status = state.StatusFailed
	case b.solvent():
		b.st.Status = state.StatusStopped
	default:
		b.st.Status = state.StatusExhausted
	}
	if err := b.record(state.Stopped(b.opts.now(), b.st.Cycle, b.st.Status)); err != nil {
		b.log.Error("journal stopped failed", "err", err)
	}
	if err := b.save(); err != nil {
		b.log.Error("final save failed", "err", err)
	}
	if b.stop.graceTimer != nil {
		b.stop.graceTimer.Stop()
	}
	b.stopped = true
	b.log.Info("being stopped", "status", b.st.Status, "cycle", b.st.Cycle)
	b.handleStopping()
	// The parent stops this actor when it reads BeingStopped, so the
	// message always arrives before the actor's termination.
	b.sendParent(ctx, b.stoppedMessage())
}

func (b *Being) stoppedMessage() messages.BeingStopped {
	msg := messages.BeingStopped{ID: b.childID(), Name: b.opts.Identity.Name}
	if b.st != nil {
		msg.Name = b.st.Identity.Name
		msg.Status = b.st.Status
	}
	if b.stop != nil {
		msg.Err = b.stop.err
	}
	return msg
}

// childID is the id a parent knows this being by: its directory's name.
func (b *Being) childID() string { return baseName(b.opts.StateDir) }

// handleTerminated notes a child actor that ended: Las (stopped by us or
// by its supervisor past the restart intensity) or a child being.
func (b *Being) handleTerminated(ctx actor.Context, msg *actor.Terminated) {
	if b.journal == nil {
		// This incarnation is over (being restarted by its parent, or
		// stopped): its children stop with it and nothing is recorded.
		return
	}
	who := msg.Who
	if b.las != nil && who.Equal(b.las) {
		// Its LasUnavailable, sent while it stopped, journals the reason;
		// the termination (a system message) usually overtakes it.
		b.las = nil
		if b.stop == nil && b.ready {
			b.lasGone("")
		}
		b.continueShutdown(ctx)
		return
	}
	for _, ref := range b.children {
		if ref.pid != nil && who.Equal(ref.pid) && !ref.done {
			ref.done = true
			if b.stop == nil {
				b.warn("child " + ref.name + " stopped: restart intensity exceeded")
			}
		}
	}
	b.continueShutdown(ctx)
}
