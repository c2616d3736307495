package budget

import (
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// Recover brings a budget loaded from a state.json without journal_seq
// (the reference's, or one written before the journal was a write-ahead
// log) up to date with the journal after a crash
// (docs/state.md#budget-reconciliation). Such a state was saved after its
// step was journaled, so a crash between the two leaves the journal ahead
// of the state by the money event of the step in flight (a cost_debited,
// or a revenue_credited). Recover finds the longest journal prefix whose
// money events account exactly for the budget (starting − remaining) and
// applies the events after it, in order:
//
//   - cost_debited: remaining −= amount; the API part is recomputed from
//     the usage of the nearest preceding model_completed at today's prices
//     (capped at amount), the rest is instance time; its tokens are added;
//   - revenue_credited: earned += amount, remaining += amount.
//
// After Recover, testkit.CheckInvariant holds for the whole journal. applied
// is how many money events were applied (0 when the state was current).
// A budget no prefix explains — the state ahead of its journal, or either
// file altered — is an error: the budget cannot be trusted.
func Recover(b state.Budget, events []state.Event, p Pricing) (state.Budget, int, error) {
	spent := b.Starting.Sub(b.Remaining) // what the journal must net to
	net, tokens := money.Zero, uint64(0)
	cut, cutNet := -1, -1 // longest prefix matching money and tokens; money only
	if net.Equal(spent) {
		cutNet = 0
		if tokens == b.TotalTokens {
			cut = 0
		}
	}
	for i, e := range events {
		switch e.Type {
		case state.EventCostDebited:
			net = net.Add(e.Amount)
			if u, ok := usageBefore(events, i); ok {
				tokens = addSaturating(tokens, ComputeDebit(Pricing{}, u, 0).Tokens)
			}
		case state.EventRevenueCredited:
			net = net.Sub(e.Amount)
		default:
			continue
		}
		if net.Equal(spent) {
			cutNet = i + 1
			if tokens == b.TotalTokens {
				cut = i + 1
			}
		}
	}
	if cut < 0 {
		// Token counts that the journal cannot explain (a state written by
		// another runtime): money alone decides.
		cut = cutNet
	}
	if cut < 0 {
		return b, 0, fault.Errorf(fault.ClassState,
			"journal does not account for the saved budget: remaining %s, starting %s, journal net %s",
			b.Remaining, b.Starting, net)
	}
	applied := 0
	for i := cut; i < len(events); i++ {
		e := events[i]
		switch e.Type {
		case state.EventCostDebited:
			if e.Amount.Sign() < 0 {
				return b, applied, fault.Errorf(fault.ClassState, "journal holds a negative debit %s", e.Amount)
			}
			d := Debit{Amount: e.Amount, API: e.Amount}
			if u, ok := usageBefore(events, i); ok {
				priced := ComputeDebit(p, u, 0)
				if priced.API.Cmp(e.Amount) < 0 {
					d.API = priced.API
				}
				d.Tokens = priced.Tokens
			}
			d.Instance = e.Amount.Sub(d.API)
			b = ApplyDebit(b, d)
			applied++
		case state.EventRevenueCredited:
			var err error
			if b, err = ApplyCredit(b, e.Amount); err != nil {
				return b, applied, err
			}
			applied++
		}
	}
	return b, applied, nil
}

// usageBefore finds the usage of the model_completed that precedes the
// debit at index i, within the same cycle and with no other debit between.
func usageBefore(events []state.Event, i int) (u chat.Usage, ok bool) {
	for j := i - 1; j >= 0; j-- {
		switch events[j].Type {
		case state.EventModelCompleted:
			if events[j].Cycle == events[i].Cycle {
				return events[j].Usage, true
			}
			return u, false
		case state.EventCostDebited:
			return u, false
		}
	}
	return u, false
}
