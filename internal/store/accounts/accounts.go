// Package accounts adds up a family's money (docs/money.md#the-family-ledger):
// what each being started with, spent, earned, granted and holds, and
// whether the family as a whole is conserved. Money enters a family only
// as the root's starting balance and as earned revenue, and leaves it only
// as spending, so
//
//	Σ over every being (remaining + api_spent + instance_spent) + in transit
//	  = the root's starting + Σ earned
//
// where "in transit" is what a parent granted to a child whose state does
// not exist yet (a spawn in progress, or one a crash interrupted). Each
// being's own books must balance too: remaining = starting − spent +
// earned − granted. The package is pure: callers bring the figures, from
// state files (singularity status) or from the live actor tree (the debug
// endpoint).
package accounts

import (
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// Entry is one being's figures.
type Entry struct {
	Budget state.Budget
	// InTransit is what this being granted to children whose state does
	// not exist yet.
	InTransit money.Amount
	// Root marks the family's root: only its starting balance came from
	// outside the family.
	Root bool
}

// Held is what the entry accounts for of the family's money: remaining,
// spent and in transit.
func (e Entry) Held() money.Amount {
	b := e.Budget
	return b.Remaining.Add(b.APISpent).Add(b.InstanceSpent).Add(e.InTransit)
}

// Off is how far the being's own books are from balancing:
// remaining − (starting + funded − spent + earned − granted); zero when
// exact.
func (e Entry) Off() money.Amount { return e.Budget.Remaining.Sub(e.Budget.Expected()) }

// Totals are a family's figures added up.
type Totals struct {
	Beings   int
	Starting money.Amount // the root's
	Granted  money.Amount
	Spent    money.Amount
	Earned   money.Amount
	// Funded is what came into the family from outside after birth
	// (docs/money.md#funding).
	Funded    money.Amount
	Remaining money.Amount
	InTransit money.Amount
	// Departed is what beings no longer listed (stopped children in the
	// live tree) hold: remaining plus spent.
	Departed money.Amount
	// Off is Σ held − (root starting + Σ funded + Σ earned): zero when the family's
	// money is conserved, positive when the books show more money than
	// came in, negative when some went missing.
	Off money.Amount
}

// Add adds one being's figures.
func (t *Totals) Add(e Entry) {
	b := e.Budget
	t.Beings++
	if e.Root {
		t.Starting = t.Starting.Add(b.Starting)
	}
	t.Granted = t.Granted.Add(b.Granted)
	t.Spent = t.Spent.Add(b.APISpent).Add(b.InstanceSpent)
	t.Earned = t.Earned.Add(b.Earned)
	t.Funded = t.Funded.Add(b.Funded)
	t.Remaining = t.Remaining.Add(b.Remaining)
	t.InTransit = t.InTransit.Add(e.InTransit)
	t.balance()
}

// AddDeparted adds what beings that are no longer listed held, earned
// and were funded.
func (t *Totals) AddDeparted(held, earned, funded money.Amount) {
	t.Departed = t.Departed.Add(held)
	t.Earned = t.Earned.Add(earned)
	t.Funded = t.Funded.Add(funded)
	t.balance()
}

func (t *Totals) balance() {
	t.Off = t.Remaining.Add(t.Spent).Add(t.InTransit).Add(t.Departed).Sub(t.Starting).Sub(t.Funded).Sub(t.Earned)
}

// Exact reports whether the family's money is conserved.
func (t Totals) Exact() bool { return t.Off.Sign() == 0 }

// Verdict is the family invariant in words: "exact", or "off by <amount>".
func (t Totals) Verdict() string {
	if t.Exact() {
		return "exact"
	}
	return "off by " + t.Off.String()
}
