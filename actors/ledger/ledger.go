// Package ledger is a being's budget: the pure arithmetic of debits and
// credits (docs/money.md#budget) and the ledger actor that holds one being's
// budget and answers for it. The ledger writes no files and prices
// without changing anything: the being journals what the ledger priced
// and, once that step is durable, tells the ledger to apply it
// (docs/money.md#debit, docs/money.md#credit).
package ledger

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// Status values of the ledger in its Description.
const (
	StatusSolvent   = "solvent"
	StatusExhausted = "exhausted"
)

// Ledger is the actor owning one being's budget. It answers:
//
//	messages.DebitRequest    → messages.DebitResponse
//	messages.CreditRequest   → messages.CreditResponse
//	messages.DescribeRequest → messages.Description
//
// Debit and credit replies only price: the budget changes when the being,
// its step durable, sends messages.CostDebited, messages.RevenueCredited
// or messages.EndowmentGranted.
//
// Its state lives only in memory; a restarted ledger starts again from
// the budget it was spawned with, so its parent should not restart it
// without respawning it from the saved state (a being's strategy
// escalates its ledger's failures instead: supervision.LedgerPolicy).
type Ledger struct {
	name    string
	pricing Pricing
	budget  state.Budget
}

var _ actor.Actor = (*Ledger)(nil)

// Props returns the props of a ledger actor named name (for the debug
// tree) holding budget b and charging at prices p. Negative prices are
// refused.
func Props(name string, p Pricing, b state.Budget) (*actor.Props, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Ledger{name: name, pricing: p, budget: b}
	}), nil
}

// Receive dispatches one message.
func (l *Ledger) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case messages.DebitRequest:
		ctx.Respond(l.handleDebit(msg))
	case messages.CreditRequest:
		ctx.Respond(l.handleCredit(msg))
	case messages.CostDebited:
		l.budget = l.budget.Debit(msg.API, msg.Instance, msg.Tokens)
	case messages.RevenueCredited:
		l.budget = l.budget.Credit(msg.Amount)
	case messages.EndowmentGranted:
		l.budget = l.budget.Grant(msg.Amount)
	case messages.DescribeRequest:
		ctx.Respond(l.handleDescribe())
	}
}

// handleDebit prices a completion; the budget changes only when the
// being reports the debit durable (CostDebited).
func (l *Ledger) handleDebit(msg messages.DebitRequest) messages.DebitResponse {
	p := l.pricing
	if msg.Prices != nil {
		p = p.WithTokens(*msg.Prices)
	}
	d := ComputeDebit(p, msg.Usage, msg.Elapsed)
	return messages.DebitResponse{API: d.API, Instance: d.Instance, Amount: d.Amount, Tokens: d.Tokens}
}

// handleCredit finds the revenue a trusted result carries; the budget
// changes only when the being reports the credit durable
// (RevenueCredited).
func (l *Ledger) handleCredit(msg messages.CreditRequest) messages.CreditResponse {
	v, ok := Revenue(msg.Tool, msg.Result)
	if !ok {
		return messages.CreditResponse{}
	}
	return messages.CreditResponse{Credited: true, Amount: v, Source: msg.Tool}
}

// solvent reports whether the budget allows another round: remaining
// above zero.
func solvent(b state.Budget) bool { return b.Remaining.Sign() > 0 }

func (l *Ledger) handleDescribe() messages.Description {
	status := StatusSolvent
	if !solvent(l.budget) {
		status = StatusExhausted
	}
	return messages.Description{
		Kind:   "ledger",
		Name:   l.name,
		Status: status,
		Figures: map[string]any{
			"starting":  l.budget.Starting.String(),
			"remaining": l.budget.Remaining.String(),
			"spent":     l.budget.APISpent.Add(l.budget.InstanceSpent).String(),
			"earned":    l.budget.Earned.String(),
			"granted":   l.budget.Granted.String(),
		},
	}
}
