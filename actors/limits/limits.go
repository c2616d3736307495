package limits

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/messages"
)

// Name is the limiter's actor name under the family.
const Name = "limits"

// Limiter is the actor. It answers:
//
//	messages.SpendRequest      → messages.SpendResponse
//	messages.SpendSettled    (no answer)
//	*clusterpb.SpendRequest    → *clusterpb.SpendResponse (another member's being)
//	*clusterpb.SpendSettled  (no answer)
//	messages.DescribeRequest → messages.Description
//
// Its window lives only in memory: a family that restarts starts a new
// window (docs/money.md#spend-limits).
type Limiter struct {
	window Window
	now    func() time.Time
	// waiting counts refusals since the last admission, for the debug
	// tree.
	refused uint64
}

// Props returns the limiter's props for a family limit per hour (nil
// for none; the beings' own limits come with each request). now is the
// clock; nil means time.Now.
func Props(family *money.Amount, now func() time.Time) *actor.Props {
	if now == nil {
		now = time.Now
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Limiter{window: Window{Family: family}, now: now}
	})
}

// Receive dispatches one message.
func (l *Limiter) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case messages.SpendRequest:
		ctx.Respond(l.handleAdmit(msg))
	case messages.SpendSettled:
		l.window.Settle(msg.Ticket, msg.Amount, l.now())
	case *clusterpb.SpendRequest:
		// From a being on another member (Proxy).
		if req, err := FromWire(msg); err == nil {
			ctx.Respond(ResponseToWire(l.handleAdmit(req)))
		}
	case *clusterpb.SpendSettled:
		if s, err := SettledFromWire(msg); err == nil {
			l.window.Settle(s.Ticket, s.Amount, l.now())
		}
	case messages.DescribeRequest:
		ctx.Respond(l.describe())
	}
}

func (l *Limiter) handleAdmit(msg messages.SpendRequest) messages.SpendResponse {
	now := l.now()
	ticket, retryAt, ok := l.window.Admit(msg.Being, msg.Amount, msg.BeingLimit, now)
	if !ok {
		l.refused++
		return messages.SpendResponse{RetryAfter: retryAt.Sub(now)}
	}
	return messages.SpendResponse{Admitted: true, Ticket: ticket}
}

func (l *Limiter) describe() messages.Description {
	figures := map[string]any{
		"spent_last_hour": l.window.Spent(l.now()).String(),
		"refused":         l.refused,
	}
	if l.window.Family != nil {
		figures["family_limit_per_hour"] = l.window.Family.String()
	}
	return messages.Description{Kind: "limits", Name: Name, Status: "running", Figures: figures}
}
