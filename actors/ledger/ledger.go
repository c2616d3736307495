// Package ledger is a being's ledger actor: the being's money as a node of
// the actor tree (docs/concepts.md#who-owns-what). It keeps no copy of the
// money. The one copy is the being's applied state (its budget and grants),
// changed only by the journal's rule once each step is durable; the pure
// arithmetic that prices debits, finds credits and bounds reservations is
// internal/store/budget, which the being calls where it decides. Asked to
// describe itself, the ledger has its being answer for it from that copy
// (docs/debug.md#figures).
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

// Kind is the ledger's kind in its Description.
const Kind = "ledger"

// Ledger is the actor of one being's ledger. It answers:
//
//	messages.DescribeRequest → messages.Description, from its being
//
// It forwards each DescribeRequest to its parent as a
// messages.LedgerFiguresRequest whose sender is the one who asked, so the
// being, which owns the money, answers that sender directly (with
// Describe) and the ledger never waits. A ledger without a parent answers
// with its kind and name only.
type Ledger struct {
	name string
}

var _ actor.Actor = (*Ledger)(nil)

// Props returns the props of the ledger actor of the being named name (its
// name in the debug tree).
func Props(name string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &Ledger{name: name} })
}

// Receive dispatches one message.
func (l *Ledger) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case messages.DescribeRequest:
		l.handleDescribe(ctx)
	}
}

// handleDescribe has the being answer for its ledger.
func (l *Ledger) handleDescribe(ctx actor.Context) {
	parent, asker := ctx.Parent(), ctx.Sender()
	switch {
	case asker == nil:
		// Told, not asked: there is nobody to answer.
	case parent == nil:
		ctx.Respond(messages.Description{Kind: Kind, Name: l.name})
	default:
		ctx.RequestWithCustomSender(parent, messages.LedgerFiguresRequest{}, asker)
	}
}

// Describe is the Description of the ledger of the being named name whose
// budget is b: status solvent while remaining is above zero, exhausted
// otherwise, and the figures starting, remaining, spent (API plus
// instance), earned and granted.
func Describe(name string, b state.Budget) messages.Description {
	status := StatusSolvent
	if b.Remaining.Sign() <= 0 {
		status = StatusExhausted
	}
	return messages.Description{
		Kind:   Kind,
		Name:   name,
		Status: status,
		Figures: map[string]any{
			"starting":  b.Starting.String(),
			"remaining": b.Remaining.String(),
			"spent":     b.APISpent.Add(b.InstanceSpent).String(),
			"earned":    b.Earned.String(),
			"granted":   b.Granted.String(),
		},
	}
}
