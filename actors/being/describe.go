package being

import (
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// StatusStorageUnavailable is a being's debug status while a durable
// write is held because storage fails.
const StatusStorageUnavailable = "storage_unavailable"

// describe answers the debug endpoint (docs/debug.md#figures): the being's own
// figures and its children in display order (ledger, las, then child beings).
func (b *Being) describe(ctx actor.Context) messages.Description {
	d := messages.Description{Kind: "being", Name: b.opts.Identity.Name, Status: "starting"}
	if b.st == nil {
		return d
	}
	d.Name = b.st.Identity.Name
	d.Status = b.st.Status
	last := ""
	if n := len(b.st.RecentActions); n > 0 {
		a := b.st.RecentActions[n-1]
		last = a.Tool + ":" + a.Status
	}
	d.Figures = map[string]any{
		"id":            b.beingID(),
		"cycle":         b.st.Cycle,
		"balance":       b.st.Budget.Remaining.String(),
		"starting":      b.st.Budget.Starting.String(),
		"spent":         b.st.Budget.APISpent.Add(b.st.Budget.InstanceSpent).String(),
		"earned":        b.st.Budget.Earned.String(),
		"granted":       b.st.Budget.Granted.String(),
		"funded":        b.st.Budget.Funded.String(),
		"remaining":     b.st.Budget.Remaining.String(),
		"current_model": b.st.Mind.CurrentModel,
		"last_action":   last,
		"tools":         b.toolCount(),
		"restarts":      b.health.restarts,
		"last_failure":  b.health.lastFailure,
	}
	if b.cycle != nil && b.cycle.waiting != waitNothing {
		d.Figures["waiting_for"] = b.cycle.waiting.String()
	}
	if t, ok := b.opts.Tiers.Get(b.st.Tier); ok {
		// The survival tier it lives in (docs/money.md#survival-tiers).
		d.Figures["tier"] = b.st.Tier
		d.Figures["tier_below"] = t.Below.String()
	}
	if r := b.st.LastReply(); r != "" {
		// The first line of its last reply (docs/debug.md#figures).
		d.Figures["last_reply"] = r
	}
	if b.st.StatusReason != "" {
		// Why its life ended (docs/debug.md#figures).
		d.Figures["reason"] = b.st.StatusReason
	}
	if t := b.inTransit(); t.Sign() != 0 {
		d.Figures["in_transit"] = t.String()
	}
	if p := b.purse; p.departedHeld.Sign() != 0 || p.departedEarned.Sign() != 0 || p.departedFunded.Sign() != 0 {
		d.Figures["departed_held"] = p.departedHeld.String()
		d.Figures["departed_earned"] = p.departedEarned.String()
		d.Figures["departed_funded"] = p.departedFunded.String()
	}
	if n := b.st.Unread(); n > 0 {
		// Messages received that no framing carried yet
		// (docs/family.md#messages).
		d.Figures["unread_messages"] = n
	}
	if s := b.st.Sleep; s != nil && b.st.Status == state.StatusRunning {
		// docs/family.md#sleep
		d.Status = s.String()
		d.Figures["sleeping_until"] = s.Until.UTC().Format(time.RFC3339)
		d.Figures["wake_on_message"] = s.WakeOnMessage
	}
	if b.purse.throttled {
		d.Status = StatusThrottled
	}
	if f := b.engine.Storage(); f.Failing {
		// A durable write is held: the being waits for storage
		// (docs/cycle.md#storage-faults).
		d.Status = StatusStorageUnavailable
		d.Figures["storage_attempts"] = f.Attempts
		d.Figures["storage_error"] = f.Last
	}
	for _, pid := range []*actor.PID{b.ledger, b.las.pid} {
		if pid != nil {
			d.Children = append(d.Children, pid)
		}
	}
	for _, ref := range b.children {
		if ref.alive() {
			d.Children = append(d.Children, ref.pid)
		}
	}
	return d
}

// describeLedger answers for the being's ledger actor, which keeps no
// figures of its own: its node shows the being's budget, the one copy of
// its money.
func (b *Being) describeLedger() messages.Description {
	if b.st == nil {
		return messages.Description{Kind: ledger.Kind, Name: b.opts.Identity.Name}
	}
	return ledger.Describe(b.st.Identity.Name, b.st.Budget)
}

func (b *Being) toolCount() int {
	if b.catalog == nil {
		return 0
	}
	return len(b.catalog.tools)
}

func baseName(dir string) string { return filepath.Base(dir) }

// inTransit is what this being granted to children not recorded yet.
func (b *Being) inTransit() money.Amount {
	sum := money.Zero
	for _, g := range b.st.Grants {
		sum = sum.Add(g.Amount)
	}
	return sum
}

// entry is the being's line in the family ledger.
func (b *Being) entry() accounts.Entry {
	return accounts.Entry{Budget: b.st.Budget, InTransit: b.inTransit()}
}

// beingID is the being's own id (docs/debug.md#figures): a child's is its
// directory name under its parent's children/ (the id spawn_child gave
// it), the root's its agent id, which children share.
func (b *Being) beingID() string {
	if b.isChild() {
		return b.childID()
	}
	return b.st.Identity.AgentID
}

// isChild says whether the being is a child: its directory is one of
// its parent's children/<id>.
func (b *Being) isChild() bool {
	return filepath.Base(filepath.Dir(b.opts.StateDir)) == "children"
}
