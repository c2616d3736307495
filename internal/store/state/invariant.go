package state

import "github.com/wisent/singularity/internal/store/money"

// MoneyTotals are the sums of a journal's money events.
type MoneyTotals struct {
	Debited, Credited, Granted, Funded money.Amount
}

// Totals sums every cost_debited, revenue_credited, endowment_granted
// and funded amount of events. A being journals a fund's key once.
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
		case EventFunded:
			t.Funded = t.Funded.Add(e.Amount)
		}
	}
	return t
}

// Plus is t and u added up.
func (t MoneyTotals) Plus(u MoneyTotals) MoneyTotals {
	return MoneyTotals{
		Debited: t.Debited.Add(u.Debited), Credited: t.Credited.Add(u.Credited),
		Granted: t.Granted.Add(u.Granted), Funded: t.Funded.Add(u.Funded),
	}
}

// Expected is what remaining must be by the budget's own figures:
// starting + funded − api_spent − instance_spent + earned − granted.
func (b Budget) Expected() money.Amount {
	return b.Starting.Add(b.Funded).Sub(b.APISpent).Sub(b.InstanceSpent).Add(b.Earned).Sub(b.Granted)
}
