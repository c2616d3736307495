package state

import "github.com/wisent/singularity/internal/store/money"

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

// Expected is what remaining must be by the budget's own figures:
// starting − api_spent − instance_spent + earned − granted.
func (b Budget) Expected() money.Amount {
	return b.Starting.Sub(b.APISpent).Sub(b.InstanceSpent).Add(b.Earned).Sub(b.Granted)
}
