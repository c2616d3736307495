package limits

import (
	"fmt"
	"time"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/messages"
)

// The spend messages as they cross members (clusterpb): money as exact
// decimal strings, a wait in whole milliseconds.

// ToWire is req as a clusterpb message.
func ToWire(req messages.SpendRequest) *clusterpb.SpendRequest {
	w := &clusterpb.SpendRequest{Being: req.Being, Amount: req.Amount.String()}
	if req.BeingLimit != nil {
		w.BeingLimit = req.BeingLimit.String()
	}
	return w
}

// FromWire is the request w carries; a malformed amount is an error.
func FromWire(w *clusterpb.SpendRequest) (messages.SpendRequest, error) {
	amount, err := money.Parse(w.GetAmount())
	if err != nil {
		return messages.SpendRequest{}, fmt.Errorf("the reservation %q is not an amount: %w", w.GetAmount(), err)
	}
	req := messages.SpendRequest{Being: w.GetBeing(), Amount: amount}
	if w.GetBeingLimit() != "" {
		limit, err := money.Parse(w.GetBeingLimit())
		if err != nil {
			return messages.SpendRequest{}, fmt.Errorf("the being's limit %q is not an amount: %w", w.GetBeingLimit(), err)
		}
		req.BeingLimit = &limit
	}
	return req, nil
}

// ResponseToWire is resp as a clusterpb message; the wait is rounded up
// to a whole millisecond.
func ResponseToWire(resp messages.SpendResponse) *clusterpb.SpendResponse {
	return &clusterpb.SpendResponse{Admitted: resp.Admitted, Ticket: resp.Ticket,
		RetryAfterMs: int64((resp.RetryAfter + time.Millisecond - 1) / time.Millisecond)}
}

// ResponseFromWire is the answer w carries.
func ResponseFromWire(w *clusterpb.SpendResponse) messages.SpendResponse {
	return messages.SpendResponse{Admitted: w.GetAdmitted(), Ticket: w.GetTicket(),
		RetryAfter: time.Duration(w.GetRetryAfterMs()) * time.Millisecond}
}

// SettledToWire is s as a clusterpb message.
func SettledToWire(s messages.SpendSettled) *clusterpb.SpendSettled {
	return &clusterpb.SpendSettled{Ticket: s.Ticket, Amount: s.Amount.String()}
}

// SettledFromWire is the settlement w carries.
func SettledFromWire(w *clusterpb.SpendSettled) (messages.SpendSettled, error) {
	amount, err := money.Parse(w.GetAmount())
	if err != nil {
		return messages.SpendSettled{}, fmt.Errorf("the cost %q is not an amount: %w", w.GetAmount(), err)
	}
	return messages.SpendSettled{Ticket: w.GetTicket(), Amount: amount}, nil
}
