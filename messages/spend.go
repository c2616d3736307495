package messages

import (
	"fmt"
	"time"

	"github.com/wisent/singularity/internal/store/money"
)

// SpendRequest asks the family's spend limiter whether a being may start a
// completion whose reservation is Amount (docs/money.md#spend-limits).
// Being names the being (its state directory); BeingLimit is its own
// limit per rolling hour, nil for none. Answered with SpendResponse.
type SpendRequest struct {
	Being      string
	Amount     money.Amount
	BeingLimit *money.Amount
}

func (a SpendRequest) String() string { return fmt.Sprintf("SpendRequest{%s %s}", a.Being, a.Amount) }

// SpendResponse answers SpendRequest. When Admitted, the reservation counts
// against the limits under Ticket until SpendSettled replaces it with the
// actual cost; otherwise RetryAfter is how long until it can fit (on the
// limiter's clock, so the being needs no clock of its own for it).
type SpendResponse struct {
	Admitted   bool
	Ticket     uint64
	RetryAfter time.Duration
}

func (a SpendResponse) String() string {
	if a.Admitted {
		return fmt.Sprintf("SpendResponse{ticket=%d}", a.Ticket)
	}
	return "SpendResponse{retry after " + a.RetryAfter.String() + "}"
}

// SpendSettled tells the limiter what an admitted completion cost (zero
// when it was never billed): the reservation of Ticket is replaced by
// Amount, counted from now.
type SpendSettled struct {
	Ticket uint64
	Amount money.Amount
}

func (s SpendSettled) String() string { return fmt.Sprintf("SpendSettled{%d %s}", s.Ticket, s.Amount) }
