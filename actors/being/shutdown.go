package being

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// stopping is what a shutdown in progress carries besides the phase.
type stopping struct {
	now        bool  // skip the waiting (second Ctrl-C)
	asked      bool  // a StopBeing asked for it (else the being ends by itself)
	err        error // the failure that ends the being, if any
	graceTimer *time.Timer
	// abandonWhy is why the cycle is abandoned at its next step, in
	// phase abandoning (a write in flight lands first).
	abandonWhy string
	// giveUp is set once a write held for storage was given up: the
	// being writes nothing more while storage fails.
	giveUp bool
	// journaled is set once the final step (stopped) is durable.
	journaled bool
	// afterCheckpoint is set while the end waits for the background
	// checkpoint to land (stopped).
	afterCheckpoint bool
	// subtree is set when the being stops for good in a spread family
	// (it ended by itself, or StopBeing.Subtree): its children stop
	// first, wherever they run. awaitingSubtree is set from its
	// SubtreeStopping until its SubtreeStopped.
	subtree, awaitingSubtree bool
}

// graceExpired is sent to self when the shutdown grace has passed.
type graceExpired struct{ epoch uint64 }

// beginStop records that the being is to stop and cancels the sleep
// before the next cycle.
func (b *Being) beginStop() {
	if b.stop != nil {
		return
	}
	b.stop = &stopping{}
	b.cancelTimer()
	if b.engine != nil {
		b.engine.Stopping()
	}
}

// handleStop starts (or hurries) a graceful shutdown.
func (b *Being) handleStop(ctx actor.Context, msg messages.StopBeing) {
	if b.phase == phaseStopped {
		b.sendParent(ctx, b.stoppedMessage())
		return
	}
	b.beginStop()
	b.stop.asked = true
	b.failInbound(ctx, control.ErrBusy)
	if msg.Now {
		// A stop that does not wait does not wait for the children on
		// other members either.
		b.stop.now, b.stop.awaitingSubtree = true, false
	}
	if msg.Subtree {
		b.stop.subtree = true
	}
	switch b.phase {
	case phaseCycling:
		b.phase = phaseDraining
		if b.stop.now || b.cycle.waiting == waitLimit {
			// A wait for the spend limit is a round boundary.
			b.abandonWork(ctx, "shutdown without waiting")
			return
		}
		b.armGrace(ctx)
	case phaseDraining:
		if b.stop.now {
			b.abandonWork(ctx, "shutdown without waiting")
		}
	case phaseAbandoning:
		// The cycle is abandoned as soon as the write in flight has
		// landed; a write held because storage fails is given up by a
		// stop that does not wait.
		if b.stop.now && b.engine.Storage().Failing && b.cycle.waiting == waitStorage {
			b.phase = phaseDraining
			b.abandonWork(ctx, "shutdown without waiting")
		}
	case phaseSaving:
		// Storage that fails the final save is given up on by a stop
		// that does not wait.
		if b.stop.now && b.engine.DropHeld() {
			b.savedOrNot(ctx)
		}
	default:
		// Outside a cycle a write held for storage (the boot step, a
		// checkpoint, warnings, the final save) is given up by a stop
		// that does not wait, and by any stop once the grace has
		// passed: none of it took effect.
		if b.stop.now && b.engine != nil {
			b.engine.DropHeld()
		}
		if !b.stop.now {
			b.armGrace(ctx)
		}
		b.continueShutdown(ctx)
	}
}

// armGrace starts the shutdown grace (once per stop). A being driven
// handler by handler has no actor system to be told by: its timer tells
// nobody.
func (b *Being) armGrace(ctx actor.Context) {
	if b.stop.graceTimer != nil {
		return
	}
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	b.stop.graceTimer = time.AfterFunc(b.opts.ShutdownGrace, func() {
		if system != nil {
			system.Root.Send(self, graceExpired{epoch})
		}
	})
}

// handleGraceExpired abandons whatever the draining cycle still waits
// for. Outside a cycle it gives up a write that storage keeps refusing
// (docs/cycle.md#storage-faults): the being then writes nothing more, and
// one whose boot step never became durable ends failed, with the storage
// error.
func (b *Being) handleGraceExpired(ctx actor.Context, msg graceExpired) {
	if msg.epoch != b.epoch {
		return
	}
	switch {
	case b.phase == phaseDraining:
		b.abandonWork(ctx, "shutdown grace expired")
	case b.phase.inCycle() || b.phase == phaseStopped || b.engine == nil || !b.engine.Storage().Failing:
	default:
		b.stop.giveUp = true
		if !b.booted && b.stop.err == nil {
			b.stop.err = fault.Errorf(fault.ClassState, "boot given up at shutdown: storage unavailable: %s", b.engine.Storage().Last)
		}
		if b.engine.DropHeld() {
			b.giveUpHeld(ctx)
		}
		// Otherwise an attempt is in flight: its failure gives the
		// write up (onDurable), its success goes on as usual.
	}
}

// abandonWork drops the step in flight: its reply is invalidated,
// a warning is journaled, and tool calls that will not run are closed
// with an outcome so the conversation stays well formed. A write in
// flight is awaited instead (phase abandoning): it lands within one
// fsync, and it may carry money.
func (b *Being) abandonWork(ctx actor.Context, why string) {
	waiting := b.cycle.waiting
	switch waiting {
	case waitStorage:
		if !b.engine.DropHeld() {
			// A write in flight lands (or fails) within one fsync.
			b.phase = phaseAbandoning
			b.stop.abandonWhy = why
			return
		}
		b.warn("abandoned a step held for storage: " + why)
		b.stop.giveUp = true
		waiting = b.cycle.held
	case waitNothing, waitLimit:
	default:
		b.warn("abandoned " + waiting.String() + " call in flight: " + why)
	}
	b.epoch++
	b.cycle.waiting = waitNothing
	b.cycle.elapsed, b.cycle.finish, b.cycle.model = 0, "", ""
	closing := b.closePendingCalls(waiting)
	if b.givingUpOnStorage() {
		// The calls stay open on disk; the next load closes them.
		b.abandonCycle(ctx)
		return
	}
	b.commit(ctx, closing, nextAbandoned)
}

// givingUpOnStorage reports a stop that does not wait while storage
// fails: the being then writes nothing more (a crash would lose as much).
func (b *Being) givingUpOnStorage() bool {
	return b.stop != nil && (b.stop.now || b.stop.giveUp) && b.engine.Storage().Failing
}

// closePendingCalls returns the tool_finished events that close the
// tool call in flight (indeterminate: its effect is unknown) and each
// call not started (not_run).
func (b *Being) closePendingCalls(waiting waitFor) []state.Event {
	inFlight := -1
	switch waiting {
	case waitLas, waitMost, waitModels, waitFile, waitChild:
		inFlight = b.cycle.next - 1
	case waitNothing, waitModel, waitStorage, waitLimit:
		// No tool call has started that has not finished.
	}
	var closing []state.Event
	first := b.cycle.next
	if inFlight >= 0 {
		first = inFlight
	}
	for i := first; i < len(b.cycle.calls); i++ {
		call := b.cycle.calls[i]
		o := outcome.Failure("not_run", "the being shut down before this call ran")
		if i == inFlight {
			o = outcome.Unknown("shutdown", "the being shut down while this call was in flight")
		}
		e := state.ToolFinished(b.opts.now(), b.st.Cycle, call.Function.Name, o.Status)
		e.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: o.Envelope()}
		closing = append(closing, e)
	}
	b.cycle.calls = nil
	return closing
}

// stopWith starts the shutdown of a being that ends by itself: exhausted
// (err nil) or failed (a permanent Brama error, or a boot failure). A
// being that failed before its state was loaded has nothing to save and
// only tells its parent.
func (b *Being) stopWith(ctx actor.Context, err error) {
	b.beginStop()
	b.failInbound(ctx, control.ErrBusy)
	b.stop.subtree = true
	if err != nil {
		b.stop.err = err
	}
	if b.st != nil {
		b.continueShutdown(ctx)
		return
	}
	b.phase = phaseStopped
	b.sendParent(ctx, messages.BeingStopped{ID: b.childID(), Name: b.opts.Identity.Name, Status: state.StatusFailed, Err: err})
}

// continueShutdown advances the shutdown ladder as far as it can: save
// "stopping" and tell the children, wait for them, stop Las and wait for
// it, then save the final status and tell the parent. It is called again
// whenever a child or Las finishes; a running cycle calls it when it
// ends.
func (b *Being) continueShutdown(ctx actor.Context) {
	if b.stop == nil {
		return
	}
	switch b.phase {
	case phaseBooting, phaseIdle:
		b.phase = phaseStoppingChildren
		if b.opts.Mode != Dormant {
			b.st.Status = state.StatusStopping // durable with the final step
		}
		for _, ref := range b.children {
			if ref.alive() {
				ctx.Send(ref.pid, messages.StopBeing{Now: b.stop.now})
			}
		}
		if b.opts.placement().ChildrenElsewhere() && b.stop.subtree && len(b.st.Mind.Children) > 0 {
			// Its children run on whichever members hold them, from the
			// moment their records committed, whether this being had
			// got to them yet or not: its member stops them.
			b.stop.awaitingSubtree = true
			b.sendParent(ctx, messages.SubtreeStopping{Dir: b.opts.StateDir})
		}
		fallthrough
	case phaseStoppingChildren:
		if b.stop.awaitingSubtree {
			return
		}
		for _, ref := range b.children {
			if ref.alive() {
				return
			}
		}
		b.phase = phaseStoppingLas
		if b.las.pid != nil {
			ctx.Stop(b.las.pid)
		}
		fallthrough
	case phaseStoppingLas:
		if b.las.pid == nil && !b.engine.Busy() {
			b.finalSave(ctx)
		}
	case phaseCycling, phaseDraining, phaseAbandoning, phaseSaving, phaseStopped:
		// A running cycle comes back here when it ends; the final save
		// is under way or done.
	}
}

// finalSave journals stopped with the final status and writes the last
// checkpoint, then tells the parent. A being that never finished its
// boot (or a dormant one, loaded only for the tree) writes nothing, so a
// refused boot leaves its directory as it was and a dormant being keeps
// its status.
func (b *Being) finalSave(ctx actor.Context) {
	if b.opts.Mode != Dormant && b.givingUpOnStorage() {
		b.phase = phaseSaving
		b.endUnjournaled(ctx)
		return
	}
	status := b.st.Status
	switch {
	case b.opts.Mode == Dormant:
	case b.stop.err != nil:
		status = state.StatusFailed
	case b.solvent():
		status = state.StatusStopped
	default:
		status = state.StatusExhausted
	}
	b.phase = phaseSaving
	reason := b.st.StatusReason
	if b.opts.Mode != Dormant {
		reason = b.endReason(status)
	}
	if !b.booted || b.opts.Mode == Dormant {
		// Nothing to write: only the parent hears it.
		b.st.Status, b.st.StatusReason = status, reason
		b.stopped(ctx)
		return
	}
	// Applying stopped sets the status and its reason, once durable.
	b.commit(ctx, []state.Event{state.Stopped(b.opts.now(), b.st.Cycle, status, reason)}, nextFinalStep)
}

// savedOrNot ends a being whose final save was given up: its end is
// journaled already (the final checkpoint was given up), or it is not
// (endUnjournaled).
func (b *Being) savedOrNot(ctx actor.Context) {
	if b.stop.journaled {
		b.stopped(ctx)
		return
	}
	b.endUnjournaled(ctx)
}

// endUnjournaled ends a being that gave up a write storage kept refusing
// before its end was journaled (docs/state.md#last-words): it ends
// failed, with the error that ended it or else the storage error
// ("state: boot given up at shutdown: storage unavailable: <error>" when
// its boot step never became durable, "state: step given up at
// shutdown: storage unavailable: <error>" otherwise), and writes that
// end as its last words, in place, before it tells its parent. A being
// of a family across processes writes none: no reader looks for them in
// its holder's directory.
func (b *Being) endUnjournaled(ctx actor.Context) {
	if b.stop.err == nil {
		what := "step"
		if !b.booted {
			what = "boot"
		}
		b.stop.err = fault.Errorf(fault.ClassState, "%s given up at shutdown: storage unavailable: %s", what, b.engine.Storage().Last)
	}
	b.st.Status = state.StatusFailed
	b.st.StatusReason = b.endReason(state.StatusFailed)
	if b.held || b.engine == nil {
		b.stopped(ctx)
		return
	}
	words := state.LastWords{Status: b.st.Status, Reason: b.st.StatusReason, At: b.opts.now(), Cycle: b.st.Cycle}
	b.onDurable(ctx, b.engine.LastWords(nextStopped, words))
}

// endReason is the sentence that explains a life ending with status
// (docs/state.md#steps): for exhausted, the balance and the reserve of
// the smallest completion it could not pay, exact; for failed, the
// error's sentence with every secret redacted; for stopped, none.
func (b *Being) endReason(status string) string {
	switch status {
	case state.StatusExhausted:
		remaining := b.st.Budget.Remaining
		need := b.purse.unpaid
		if need == nil {
			floor := b.reserveFloor(b.cognition())
			need = &floor
		}
		if need.Cmp(remaining) <= 0 {
			return fmt.Sprintf("balance %s USD is spent", remaining)
		}
		return fmt.Sprintf("balance %s USD cannot pay the next completion's reserve %s USD", remaining, need)
	case state.StatusFailed:
		if b.stop != nil && b.stop.err != nil {
			return b.opts.Secrets.RedactString(b.stop.err.Error())
		}
	}
	return ""
}

// stopped ends the being: files closed, the parent told. Warnings still
// queued (storage came back during the final save) are journaled first.
func (b *Being) stopped(ctx actor.Context) {
	if b.engine.Writing() {
		// A cycle-end checkpoint still writes state.json: the being ends
		// when it has landed (landed), so nothing of it writes after the
		// stop.
		b.stop.afterCheckpoint = true
		return
	}
	if b.engine.Warnings() && b.booted && !b.engine.Busy() && b.engine.Opened() && !b.givingUpOnStorage() {
		b.commit(ctx, nil, nextStopped)
		return
	}
	if b.stop.graceTimer != nil {
		b.stop.graceTimer.Stop()
	}
	if b.rests(ctx) {
		b.rest(ctx) // revive.go
		return
	}
	b.phase = phaseStopped
	b.log.Info("being stopped", "status", b.st.Status, "cycle", b.st.Cycle)
	b.handleStopping()
	// The parent stops this actor when it reads BeingStopped, so the
	// message always arrives before the actor's termination.
	b.sendParent(ctx, b.stoppedMessage())
}

// fenced ends a being whose fence refused a step
// (docs/cluster.md#a-fenced-being): another member may hold it now, or
// nobody can tell whether the step counted, so it writes nothing more,
// not even its stop. This incarnation ends at once: replies still on
// their way are ignored, and the parent, told by BeingStopped with Fenced
// set and the being's last applied status, stops the actor with its Las
// and anything in flight. A tool call that was running is closed as
// indeterminate by the being's next holder, never replayed.
func (b *Being) fenced(ctx actor.Context, err error) {
	if b.phase == phaseStopped {
		return
	}
	b.log.Error("being fenced: it stops and writes nothing more", "err", err)
	b.fencedInbound(ctx, control.ErrBusy)
	msg := b.stoppedMessage()
	msg.Err, msg.Fenced = err, true
	if b.stop != nil && b.stop.graceTimer != nil {
		b.stop.graceTimer.Stop()
	}
	b.handleStopping()
	// As in stopped: the parent stops this actor when it reads the
	// message, so it arrives before the actor's termination.
	b.sendParent(ctx, msg)
}

func (b *Being) stoppedMessage() messages.BeingStopped {
	msg := messages.BeingStopped{ID: b.childID(), Name: b.opts.Identity.Name}
	if b.st != nil {
		msg.Name = b.st.Identity.Name
		msg.Status = b.st.Status
		msg.Held = b.entry().Held().Add(b.purse.departedHeld)
		msg.Earned = b.st.Budget.Earned.Add(b.purse.departedEarned)
		msg.Funded = b.st.Budget.Funded.Add(b.purse.departedFunded)
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
	if b.phase == phaseStopped {
		// This incarnation is over (being restarted by its parent, or
		// stopped): its children stop with it and nothing is recorded.
		return
	}
	who := msg.Who
	if b.las.pid != nil && who.Equal(b.las.pid) {
		// Its LasUnavailable, sent while it stopped, journals the reason;
		// the termination (a system message) usually overtakes it.
		b.las.pid = nil
		if b.phase == phaseIdle || b.phase == phaseCycling {
			b.lasEnded("")
		} else if b.las.link == lasUp || b.las.link == lasStarting {
			b.las.link = lasLost // stopped by the shutdown (or a failed boot)
		}
		b.continueShutdown(ctx)
		return
	}
	for _, ref := range b.children {
		if ref.pid == nil || !who.Equal(ref.pid) {
			continue
		}
		if ref.alive() {
			ref.done = true
			if b.stop == nil && !ref.revive {
				b.warn("child " + ref.name + " stopped: restart intensity exceeded")
			}
		}
		ref.gone = true
		if ref.revive && b.stop == nil {
			b.reviveChild(ctx, ref)
		}
	}
	b.continueShutdown(ctx)
}
