package being

import (
	"time"

	"github.com/wisent/singularity/internal/store/state"
)

// Survival tiers (docs/money.md#survival-tiers): at each cycle's framing
// the being looks up the tier its remaining balance is in. Entering
// another tier is journaled with the framing, and the tier's settings
// hold from that cycle on.

// tierChange is what a cycle's framing journals before its
// cycle_started when the balance has moved the being into another tier:
// tier_changed and, when the new tier names a model the being is not on,
// model_switched to it. It returns the tier the cycle runs in and the
// model it runs on. Only entering a tier switches the model, so a switch
// the being makes itself holds within its tier; leaving every tier keeps
// the model the being is on.
func (b *Being) tierChange(at state.Time, cycle uint64) ([]state.Event, int, string) {
	model := b.st.Mind.CurrentModel
	n := b.opts.Tiers.For(b.st.Budget.Remaining)
	if n == b.st.Tier {
		return nil, n, model
	}
	events := []state.Event{state.TierChanged(at, cycle, n, b.st.Budget.Remaining)}
	if t, ok := b.opts.Tiers.Get(n); ok && t.Model != "" && t.Model != model {
		switched := state.ModelSwitched(t.Model)
		switched.At, switched.Cycle = at, cycle
		events = append(events, switched)
		model = t.Model
	}
	return events, n, model
}

// maxToolRounds bounds this cycle's model rounds: the tier's, or the
// configured SINGULARITY_MAX_TOOL_ROUNDS.
func (b *Being) maxToolRounds() int {
	if t, ok := b.opts.Tiers.Get(b.st.Tier); ok && t.MaxToolRounds > 0 {
		return t.MaxToolRounds
	}
	return b.opts.MaxToolRounds
}

// cycleInterval is the pause before the next cycle: the tier's, or the
// configured SINGULARITY_CYCLE_INTERVAL_SECS.
func (b *Being) cycleInterval() time.Duration {
	if t, ok := b.opts.Tiers.Get(b.st.Tier); ok && t.IntervalSet {
		return t.CycleInterval
	}
	return b.opts.CycleInterval
}
