package being

import (
	"path"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// An exhausted being lives again when a fund un-ends it
// (docs/money.md#funding). A dormant being, one loaded for the tree
// because its life had ended, or one that rests after ending under its
// family's hold (rest), comes alive in its own actor (awaken): it boots
// as a loaded living being does, and its directory is not loaded again.
// A child whose actor ended is funded in its directory and started
// again by its parent instead (handleReviveChild).

// rests reports whether the being, whose final step and checkpoint are
// durable, keeps its actor, dormant, instead of ending it: a child
// started by its parent being (its actor is the parent's, named as its
// parent's supervisor tells a child being) that ended its life
// exhausted by itself (no stop was asked) while held under its family's
// hold. Such a hold loads each being once (docs/cluster.md#placement),
// so an actor that ended could not come back before the family's next
// hold, and only this actor can take the fund that revives it. In one
// process, and in a family spread over members, the actor ends and its
// directory takes the fund.
func (b *Being) rests(ctx actor.Context) bool {
	if !b.held || b.opts.placement().ChildrenElsewhere() || b.opts.Mode != Run || !b.booted ||
		b.stop == nil || !b.stop.journaled || b.stop.asked || b.stop.err != nil || b.st.Status != state.StatusExhausted {
		return false
	}
	self := ctx.Self()
	return self != nil && strings.HasPrefix(path.Base(self.Id), supervision.ChildBeingPrefix)
}

// rest turns a being whose life just ended exhausted (rests) dormant in
// its actor: its Las has stopped and its children with it, it keeps its
// ledger and its files, takes funds and the operator's messages, and
// its parent counts it as ended (messages.BeingEnded). A stop asked
// later ends it as any dormant being.
func (b *Being) rest(ctx actor.Context) {
	b.log.Info("being exhausted: it rests dormant until a fund", "status", b.st.Status, "cycle", b.st.Cycle)
	b.epoch++ // replies to work of the life that ended do nothing
	b.cancelTimer()
	b.stopRedelivery()
	b.opts.Mode = Dormant
	b.stop = nil
	b.phase = phaseIdle
	b.las = lasSide{}
	b.engine.Living()
	b.sendParent(ctx, messages.BeingEnded{ID: b.childID()})
}

// awaken brings a dormant being that a fund un-ended back to life in its
// own actor: it starts its Las, journals its boot step, repairs its
// family, resumes its children and begins its first cycle, as a living
// being loaded from its directory does, and its parent counts it as
// alive again (messages.BeingRevived). What it knew of a life that
// ended goes: its purse (but its children's departed money), its
// schedule and its Las. Its children that stopped with its end stay
// stopped until the family's next hold (resumeChildren).
func (b *Being) awaken(ctx actor.Context) {
	b.log.Info("funded: the being lives again")
	b.cancelTimer()
	b.opts.Mode = Run
	b.phase = phaseBooting
	b.purse = purse{departedHeld: b.purse.departedHeld, departedEarned: b.purse.departedEarned, departedFunded: b.purse.departedFunded}
	// The fund wakes a sleep that wakes on messages, as it wakes a
	// living being's (rouse).
	b.next = schedule{roused: b.asleep() && b.st.Sleep.WakeOnMessage}
	b.las = lasSide{}
	b.tierApplied = false
	b.sendParent(ctx, messages.BeingRevived{ID: b.childID()})
	b.startLas(ctx)
}
