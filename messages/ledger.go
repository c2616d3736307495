package messages

import (
	"encoding/json"
	"time"

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

// DebitRequest asks a being's ledger to charge one Brama completion
// (docs/money.md#debit): its token usage and the wall-clock time the call took.
// Answered with a DebitResponse.
type DebitRequest struct {
	Usage   chat.Usage
	Elapsed time.Duration
}

// DebitResponse is the debit applied: the API part and the instance part
// (each rounded up to 12 places), their sum, and the budget after it. The
// caller journals model_completed and cost_debited{Amount} and saves the
// budget before any tool of the round runs.
type DebitResponse struct {
	API      money.Amount
	Instance money.Amount
	Amount   money.Amount
	Budget   Budget
}

// CreditRequest asks the ledger to credit trusted revenue evidence from a
// tool result (docs/money.md#credit): the tool's name and its result as JSON
// text. Answered with a CreditResponse.
type CreditRequest struct {
	Tool   string
	Result json.RawMessage
}

// CreditResponse says whether anything was credited. When Credited, the
// caller journals revenue_credited{Amount, Source} and saves Budget.
type CreditResponse struct {
	Credited bool
	Amount   money.Amount // rounded down to 12 places; zero unless Credited
	Source   string       // the tool name; empty unless Credited
	Budget   Budget
}
