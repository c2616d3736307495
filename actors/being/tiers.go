package being

import (
	"errors"
	"fmt"
	"time"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
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
// the model the being is on. The first framing of an incarnation (a
// resumed or restarted being) applies the tier it is in afresh, from the
// tiers file as it is now: the file may have changed while it was down.
func (b *Being) tierChange(at state.Time, cycle uint64) ([]state.Event, int, string) {
	model := b.st.Mind.CurrentModel
	n := b.opts.Tiers.For(b.st.Budget.Remaining)
	afresh := !b.tierApplied
	b.tierApplied = true
	if n == b.st.Tier && !afresh {
		return nil, n, model
	}
	var events []state.Event
	if n != b.st.Tier {
		events = append(events, state.TierChanged(at, cycle, n, b.st.Budget.Remaining))
	}
	if t, ok := b.opts.Tiers.Get(n); ok && t.Model != "" && t.Model != model {
		events = append(events, b.switched(t.Model, at, cycle))
		model = t.Model
	}
	return events, n, model
}

// switched is the model_switched event of a switch the being makes
// itself (not a tool), at the given time and cycle.
func (b *Being) switched(model string, at state.Time, cycle uint64) state.Event {
	e := state.ModelSwitched(model)
	e.At, e.Cycle = at, cycle
	return e
}

// modelNotServed handles a completion refused because its model is not
// served (gateway.ErrModelNotServed, docs/brama.md#unserved-models): when
// another model is left to try (tiers.Table.Fallback), the cycle ends on
// the refusal made transient, so that the being lives on, with a warning
// and model_switched to that model, which the next cycle asks. Any other
// error, and a refusal with no model left, comes back as it was.
func (b *Being) modelNotServed(err error) ([]state.Event, error) {
	if !errors.Is(err, gateway.ErrModelNotServed) {
		return nil, err
	}
	refused := b.st.Mind.CurrentModel
	next := b.opts.Tiers.Fallback(b.st.Budget.Remaining, b.opts.Model, refused)
	if next == "" {
		return nil, err
	}
	b.warn(fmt.Sprintf("model %s is not served: switched to %s", refused, next))
	return []state.Event{b.switched(next, b.opts.now(), b.st.Cycle)}, fault.Upstream(fault.ClassBrama, fault.Transient, "%w", err)
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
