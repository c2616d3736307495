package testkit

import (
	"fmt"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// USD is money.Parse for amounts a test writes down, known to be valid;
// it panics otherwise.
func USD(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// CheckInvariant verifies the ledger invariant of
// docs/money.md#the-invariant between a budget and the being's whole
// journal, exactly:
//
//	remaining = starting − Σ cost_debited + Σ revenue_credited − Σ endowment_granted
//
// and the budget's own consistency, remaining = starting − api_spent −
// instance_spent + earned − granted, with granted equal to the journal's
// grants and no amount negative except remaining. The runtime keeps the
// invariant by construction; the tests check it.
func CheckInvariant(b state.Budget, events []state.Event) error {
	if err := b.Check(); err != nil {
		return fmt.Errorf("ledger invariant violated: %w", err)
	}
	return CheckTotals(b, state.Totals(events))
}

// CheckTotals is CheckInvariant for a life whose money events sum to t.
func CheckTotals(b state.Budget, t state.MoneyTotals) error {
	if err := b.Check(); err != nil {
		return fmt.Errorf("ledger invariant violated: %w", err)
	}
	want := b.Starting.Add(t.Funded).Sub(t.Debited).Add(t.Credited).Sub(t.Granted)
	if !b.Remaining.Equal(want) {
		return fmt.Errorf("ledger invariant violated: remaining %s, but starting %s + funded %s − debited %s + credited %s − granted %s = %s",
			b.Remaining, b.Starting, t.Funded, t.Debited, t.Credited, t.Granted, want)
	}
	if !b.Funded.Equal(t.Funded) {
		return fmt.Errorf("ledger invariant violated: funded %s, but the journal's funds sum to %s", b.Funded, t.Funded)
	}
	if !b.Granted.Equal(t.Granted) {
		return fmt.Errorf("ledger invariant violated: granted %s, but the journal's grants sum to %s", b.Granted, t.Granted)
	}
	if want := b.Expected(); !b.Remaining.Equal(want) {
		return fmt.Errorf("ledger invariant violated: remaining %s, but starting + funded − spent + earned − granted = %s", b.Remaining, want)
	}
	return nil
}
