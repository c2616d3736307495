package state

import (
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/supervision"
)

// MoneyTotals are the sums of a journal's money events.
type MoneyTotals struct {
	Debited, Credited, Granted money.Amount
}

// Totals sums every cost_debited, revenue_credited and endowment_granted
// amount of events.
func Totals(events []Event) MoneyTotals {
	var t MoneyTotals
	for _, e := range events {
		switch e.Type {
		case EventCostDebited:
			t.Debited = t.Debited.Add(e.Amount)
		case EventRevenueCredited:
			t.Credited = t.Credited.Add(e.Amount)
		case EventEndowmentGranted:
			t.Granted = t.Granted.Add(e.Amount)
		}
	}
	return t
}

// CheckInvariant verifies the ledger invariant of docs/money.md#the-invariant
// between a budget and the being's whole journal, exactly:
//
//	remaining = starting − Σ cost_debited + Σ revenue_credited − Σ endowment_granted
//
// and the budget's own consistency, remaining = starting − api_spent −
// instance_spent + earned − granted, with granted equal to the journal's
// grants and no amount negative except remaining.
func CheckInvariant(b Budget, events []Event) error {
	if err := b.check(); err != nil {
		return supervision.Errorf(supervision.ClassState, "ledger invariant violated: %w", err)
	}
	t := Totals(events)
	want := b.Starting.Sub(t.Debited).Add(t.Credited).Sub(t.Granted)
	if !b.Remaining.Equal(want) {
		return supervision.Errorf(supervision.ClassState,
			"ledger invariant violated: remaining %s, but starting %s − debited %s + credited %s − granted %s = %s",
			b.Remaining, b.Starting, t.Debited, t.Credited, t.Granted, want)
	}
	if !b.Granted.Equal(t.Granted) {
		return supervision.Errorf(supervision.ClassState,
			"ledger invariant violated: granted %s, but the journal's grants sum to %s", b.Granted, t.Granted)
	}
	if want := b.Expected(); !b.Remaining.Equal(want) {
		return supervision.Errorf(supervision.ClassState,
			"ledger invariant violated: remaining %s, but starting − spent + earned − granted = %s", b.Remaining, want)
	}
	return nil
}

// Expected is what remaining must be by the budget's own figures:
// starting − api_spent − instance_spent + earned − granted.
func (b Budget) Expected() money.Amount {
	return b.Starting.Sub(b.APISpent).Sub(b.InstanceSpent).Add(b.Earned).Sub(b.Granted)
}
