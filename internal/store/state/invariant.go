package state

import (
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/supervision"
)

// JournalTotals sums the journal's money events: every cost_debited amount
// and every revenue_credited amount.
func JournalTotals(events []Event) (debited, credited money.Amount) {
	for _, e := range events {
		switch e.Type {
		case EventCostDebited:
			debited = debited.Add(e.Amount)
		case EventRevenueCredited:
			credited = credited.Add(e.Amount)
		}
	}
	return debited, credited
}

// CheckInvariant verifies the ledger invariant of docs/money.md#the-invariant
// between a budget and the being's whole journal, exactly:
//
//	remaining = starting − Σ cost_debited + Σ revenue_credited
//
// and the budget's own consistency, remaining − starting = earned −
// api_spent − instance_spent (net profit), with no amount negative except
// remaining.
func CheckInvariant(b Budget, events []Event) error {
	if err := b.check(); err != nil {
		return supervision.Errorf(supervision.ClassState, "ledger invariant violated: %w", err)
	}
	debited, credited := JournalTotals(events)
	want := b.Starting.Sub(debited).Add(credited)
	if !b.Remaining.Equal(want) {
		return supervision.Errorf(supervision.ClassState,
			"ledger invariant violated: remaining %s, but starting %s − debited %s + credited %s = %s",
			b.Remaining, b.Starting, debited, credited, want)
	}
	if net := b.Remaining.Sub(b.Starting); !net.Equal(b.NetProfit()) {
		return supervision.Errorf(supervision.ClassState,
			"ledger invariant violated: remaining − starting = %s, but net profit = %s", net, b.NetProfit())
	}
	return nil
}
