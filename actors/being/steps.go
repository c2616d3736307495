package being

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/state"
)

// The being's durable writes (docs/state.md#the-journal). Every decision
// is a step: its journal events, made durable by the being's engine
// (internal/durable) with one write and one fsync on the family's writer
// pool, and applied to the being (state.Being.Apply) only once the
// engine says Committed. state.json is a checkpoint of the applied
// events, written at cycle ends, at shutdown, and when enough events lie
// past the last one. One write is in flight at a time, and a write that
// fails is held and tried again by the engine; nothing of it takes
// effect meanwhile (docs/cycle.md#storage-faults).
//
// commit is the one entry point. Its tag names what follows the write
// (resume): the being keeps the data the next step needs in its cycle,
// its stop or its boot, never in a continuation.

// next is what follows a durable write: a kind, and flags.
type next = durable.Tag

// Kinds of next (resume says what each does).
const (
	nextNothing   next = iota
	nextRound          // the framing is durable: the first round
	nextTools          // a completion is durable: its tools, or the cycle's end
	nextRejected       // a billed rejection is durable: the cycle ends on its error
	nextTool           // a tool's step is durable: the next call
	nextGrant          // a child's grant is durable: its state directory
	nextAdmitWait      // the spend limit's warning is durable: wait, then ask again
	nextAbandoned      // the closing of abandoned calls is durable
	nextCycleEnd       // the cycle-end checkpoint: what follows the cycle
	nextBootStep       // started is durable: the boot checkpoint
	nextBooted         // the boot checkpoint: the family's repair
	nextGrantDone      // a completed grant's child record: the next grant
	nextFinalStep      // stopped is durable: the final checkpoint
	nextStopped        // the final checkpoint (or the last warnings): the end
	nextOperator       // the operator's funds and messages are durable: their answers

	kindMask next = 0xff
	// thenCheckpoint makes a checkpoint follow the step (a step is
	// written first only when it has events or warnings).
	thenCheckpoint next = 1 << 8
	// inBackground lets the being go on while that checkpoint's
	// state.json is written (durable.Engine.Checkpoint).
	inBackground next = 1 << 9
)

// commit makes events durable as one step, with the queued warnings and
// message deliveries (post.go), applies them and goes on with n (resume). With thenCheckpoint a
// checkpoint follows first; a running cycle's step is also followed by
// one when enough events lie past the last.
func (b *Being) commit(ctx actor.Context, events []state.Event, n next) {
	if n&thenCheckpoint != 0 && (!b.engine.Opened() || b.opts.Mode == Dormant) {
		// A being without files (a dormant one) writes nothing.
		b.resume(ctx, n&kindMask)
		return
	}
	events = append(events, b.takeDelivered()...)
	if n&thenCheckpoint != 0 && len(events) == 0 && !b.engine.Warnings() {
		b.checkpoint(ctx, n&^thenCheckpoint)
		return
	}
	if b.cycle != nil {
		b.cycle.held = heldBy(n)
		b.cycle.waiting = waitStorage
	}
	b.onDurable(ctx, b.engine.Step(n, events, b.opts.now(), b.st.Cycle))
}

// heldBy is what giving up a step held for storage (a stop while storage
// fails) leaves in flight: a tool's step answers its call, a grant is
// part of a spawn call.
func heldBy(n next) waitFor {
	switch n & kindMask {
	case nextTool:
		return waitFile
	case nextGrant:
		return waitChild
	}
	return waitNothing
}

// checkpoint writes state.json from the applied state: the messages that
// left the window go to conversation.jsonl first, then the checkpoint
// drops them.
func (b *Being) checkpoint(ctx actor.Context, n next) {
	if b.cycle != nil {
		b.cycle.held = waitNothing // the checkpoint answers no call
		b.cycle.waiting = waitStorage
	}
	kept, archived := b.windowed()
	snapshot := b.snapshotWith(kept)
	snapshot.UpdatedAt = b.opts.now()
	b.onDurable(ctx, b.engine.Checkpoint(n, snapshot, kept, archived, n&inBackground != 0))
}

// onDurable reacts to what the engine answered.
func (b *Being) onDurable(ctx actor.Context, events []durable.Event) {
	for _, ev := range events {
		switch ev := ev.(type) {
		case durable.Committed:
			b.committed(ctx, ev)
		case durable.Checkpointed:
			if b.cycle != nil {
				b.cycle.waiting = waitNothing
			}
			b.keepWindow(ev.Kept)
			b.wrote(ctx, ev.Tag&^inBackground)
		case durable.Landed:
			b.landed(ctx, ev)
		case durable.Unavailable:
			if b.givingUpOnStorage() {
				// A stop that does not wait came while this attempt ran.
				b.giveUpHeld(ctx)
			}
		case durable.Fenced:
			b.fenced(ctx, ev.Err)
		case durable.Created:
			b.created(ctx, ev)
		case durable.WordsWritten:
			// Written or not (the engine logged why): the being ends.
			b.resume(ctx, ev.Tag&kindMask)
		case durable.Recovered:
			// Its warning goes with the next step.
		}
	}
}

// committed applies a durable step and goes on.
func (b *Being) committed(ctx actor.Context, ev durable.Committed) {
	if b.cycle != nil {
		b.cycle.waiting = waitNothing
	}
	for _, e := range ev.Events {
		b.st.Apply(e)
		if e.Type == state.EventModelCompleted && e.Chat != nil && b.cycle != nil {
			// The tools run, and the cycle ends, on the message as
			// journaled: with every secret redacted.
			b.cycle.reply = *e.Chat
		}
	}
	b.delivering(ctx, ev.Events)
	if o := b.opts.Observer; o != nil {
		step := observe.Step{Being: b.me, Events: ev.Events, Status: b.st.Status, Balance: b.st.Budget.Remaining, Tier: b.st.Tier}
		if b.cycle != nil {
			step.Elapsed, step.Finish, step.Model = b.cycle.elapsed, b.cycle.finish, b.cycle.model
			b.cycle.elapsed, b.cycle.finish, b.cycle.model = 0, "", ""
		}
		o.Step(step)
	}
	if ev.Tag&thenCheckpoint != 0 || (b.phase.inCycle() && b.engine.CheckpointDue()) {
		b.checkpoint(ctx, ev.Tag&^thenCheckpoint)
		return
	}
	b.wrote(ctx, ev.Tag)
}

// wrote goes on once a write is durable: with what n names, then, when
// that wrote nothing more, with a shutdown in progress, a tick that came
// meanwhile, or the warnings queued meanwhile.
func (b *Being) wrote(ctx actor.Context, n next) {
	b.resume(ctx, n&kindMask)
	switch {
	case b.engine.Busy():
		// It went on with another write.
	case b.stop != nil && !b.phase.inCycle():
		b.continueShutdown(ctx)
	case b.next.deferred:
		b.next.deferred = false
		b.startCycle(ctx)
	case len(b.inbound) > 0:
		b.flushInbound(ctx)
	default:
		b.flushWarnings(ctx)
	}
}

// resume does what follows a durable write.
func (b *Being) resume(ctx actor.Context, n next) {
	switch n {
	case nextNothing:
	case nextRound:
		b.startRound(ctx)
	case nextTools:
		b.completionDurable(ctx)
	case nextRejected:
		b.rejectionDurable(ctx)
	case nextTool:
		b.toolDurable(ctx)
	case nextGrant:
		b.grantDurable(ctx)
	case nextAdmitWait:
		b.waitToAdmit(ctx)
	case nextAbandoned:
		b.abandonCycle(ctx)
	case nextCycleEnd:
		b.afterCycle(ctx)
	case nextBootStep:
		b.st.Status = state.StatusRunning // durable with the boot checkpoint
		b.st.StatusReason = ""
		b.checkpoint(ctx, nextBooted)
	case nextBooted:
		b.bootDurable(ctx)
	case nextGrantDone:
		b.completeGrants(ctx)
	case nextFinalStep:
		b.stop.journaled = true
		b.commit(ctx, nil, nextStopped|thenCheckpoint)
	case nextStopped:
		b.stopped(ctx)
	case nextOperator:
		b.operatorDurable(ctx)
	}
}

// landed records a checkpoint whose state.json is durable; a stop that
// waited for the background checkpoint goes on.
func (b *Being) landed(ctx actor.Context, l durable.Landed) {
	if l.Applied {
		seq := l.Seq
		b.st.UpdatedAt = l.UpdatedAt
		b.st.JournalSeq = &seq
	}
	if l.Background && b.stop != nil && b.stop.afterCheckpoint && !b.engine.Writing() {
		b.stop.afterCheckpoint = false
		b.stopped(ctx)
	}
}

// flushWarnings journals the pending warnings (and message deliveries)
// as a step of their own
// when no write is in flight; otherwise they go with the next step.
// A running cycle's warnings always wait for its next step, a booting
// being's go with its boot steps, and a being whose boot step is not
// durable writes nothing.
func (b *Being) flushWarnings(ctx actor.Context) {
	if b.engine == nil || !b.engine.Warnings() && len(b.post.done) == 0 || b.engine.Busy() || !b.booted || b.phase.inCycle() ||
		b.phase == phaseBooting || b.phase == phaseSaving || b.phase == phaseStopped {
		return
	}
	b.commit(ctx, nil, nextNothing)
}

// warn queues a warning for the journal (with the next step) and logs
// it. A text equal to the last queued one counts as a repeat.
func (b *Being) warn(message string) {
	b.log.Warn(message)
	if b.engine != nil {
		b.engine.Warn(message)
	}
}

// giveUpHeld drops the held write for a stop that does not wait and
// goes on with the shutdown from where the being is.
func (b *Being) giveUpHeld(ctx actor.Context) {
	switch b.phase {
	case phaseCycling, phaseDraining, phaseAbandoning:
		b.phase = phaseDraining
		b.abandonWork(ctx, "shutdown without waiting")
	case phaseSaving:
		b.engine.DropHeld()
		b.savedOrNot(ctx)
	default:
		b.engine.DropHeld()
		b.continueShutdown(ctx)
	}
}
