package being

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A being's sleep (docs/family.md#sleep): singularity_self_sleep
// journals slept {until, wake_on_message} in the step of its call; the
// calls of that round still run, then the cycle ends, and no completion
// is requested before until, on the being's clock, unless the sleep
// wakes on messages and a message or a fund arrives (rouse). The sleep
// is in the applied state, so a resumed being sleeps on until its time;
// the next cycle's cycle_started ends it.

// asleep reports whether the being sleeps: a sleep is recorded, and the
// next cycle has not begun.
func (b *Being) asleep() bool { return b.st != nil && b.st.Sleep != nil }

// sleepWait is how long the being still sleeps: until its sleep's end,
// or nothing when that has passed or when a message came while the
// cycle that slept ran and the sleep wakes on messages (the inbox holds
// what no framing carried yet). ok is false when it does not sleep.
func (b *Being) sleepWait() (wait time.Duration, ok bool) {
	s := b.st.Sleep
	if s == nil {
		return 0, false
	}
	if s.WakeOnMessage && b.st.Unread() > 0 {
		return 0, true
	}
	return max(s.Until.Sub(b.opts.clock()), 0), true
}

// firstTick starts the life of a booted being: its first cycle at once,
// or, when it loaded asleep, once its sleep ends (unless the fund that
// revived it woke it, awaken). once runs its cycle whatever the sleep:
// the operator asked for it.
func (b *Being) firstTick(ctx actor.Context) {
	if wait, ok := b.sleepWait(); ok && b.opts.Mode == Run && wait > 0 && !b.next.roused {
		b.tickAfter(ctx, wait)
		return
	}
	ctx.Send(ctx.Self(), tick{b.epoch})
}

// tickAfter starts the next cycle after wait on the being's clock; a
// stop request, or a rouse, cancels the wait.
func (b *Being) tickAfter(ctx actor.Context, wait time.Duration) {
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	if wait <= 0 {
		ctx.Send(self, tick{epoch})
		return
	}
	b.next.cancel = b.opts.clockAfter(wait, func() { system.Root.Send(self, tick{epoch}) })
}

// rouse wakes a being that sleeps on messages: a message or a fund has
// just been applied. Its next cycle starts at once, unless it is not
// between cycles (its cycle runs, or it stops: the cycle's end decides,
// sleepWait) or its sleep ignores messages.
func (b *Being) rouse(ctx actor.Context) {
	if !b.asleep() || !b.st.Sleep.WakeOnMessage || b.phase != phaseIdle || b.stop != nil || b.opts.Mode != Run {
		return
	}
	if b.opts.MaxCycles > 0 && b.st.Cycle >= b.opts.MaxCycles {
		return // idle for good
	}
	b.cancelTimer()
	b.log.Info("woken from sleep by a message or a fund")
	ctx.Send(ctx.Self(), tick{b.epoch})
}
