package messages

import (
	"encoding/json"
	"time"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Budget is a ledger's budget as carried in replies. It has exactly the
// fields of state.Budget, so either converts to the other
// (state.Budget(b), messages.Budget(sb)); it is declared here because
// messages may not import state.
type Budget struct {
	Starting      money.Amount
	Remaining     money.Amount
	APISpent      money.Amount
	InstanceSpent money.Amount
	TotalTokens   uint64
	Earned        money.Amount
}

// DebitRequest asks a being's ledger to price one Brama completion
// (docs/money.md#debit): its token usage and the wall-clock time the call
// took. Answered with a DebitResponse. Pricing changes nothing: the being
// journals the debit first and then tells the ledger CostDebited.
type DebitRequest struct {
	Usage   chat.Usage
	Elapsed time.Duration
	// Prices, when set, replaces the ledger's configured prices per
	// million tokens for this debit (the completion's per-model price,
	// docs/brama.md#per-model-prices).
	Prices *prices.Pair
}

// DebitResponse is the priced completion: the API part and the instance
// part (each rounded up to 12 places), their sum, and the tokens it adds.
type DebitResponse struct {
	API      money.Amount
	Instance money.Amount
	Amount   money.Amount
	Tokens   uint64
}

// CostDebited tells the ledger that a priced debit is durable in the
// journal: it takes it from the budget now.
type CostDebited struct {
	API      money.Amount
	Instance money.Amount
	Tokens   uint64
}

// CreditRequest asks the ledger whether a tool result is trusted revenue
// evidence (docs/money.md#credit): the tool's name and its result as JSON
// text. Answered with a CreditResponse; nothing is credited until the
// being, having journaled it, sends RevenueCredited.
type CreditRequest struct {
	Tool   string
	Result json.RawMessage
}

// CreditResponse says whether the result carries revenue and how much.
type CreditResponse struct {
	Credited bool
	Amount   money.Amount // rounded down to 12 places; zero unless Credited
	Source   string       // the tool name; empty unless Credited
}

// RevenueCredited tells the ledger that a credit is durable in the
// journal: it adds it to the budget now.
type RevenueCredited struct {
	Amount money.Amount
}

// EndowmentGranted tells the ledger that an endowment moved to a child is
// durable in the journal (docs/money.md#funded-children): remaining −=
// Amount, granted += Amount.
type EndowmentGranted struct {
	Amount money.Amount
}
