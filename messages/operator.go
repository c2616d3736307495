package messages

import (
	"fmt"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// FundRequest asks a being to apply a fund from outside the family
// (docs/money.md#funding): Amount USD under Key, with the operator's
// Note. The being answers FundResponse only once the funded event is
// durable and applied; a Key it applied before is answered with that
// first application, and nothing is written.
type FundRequest struct {
	Amount    money.Amount
	Key, Note string
}

func (r FundRequest) String() string { return fmt.Sprintf("FundRequest{%s key=%s}", r.Amount, r.Key) }

// FundResponse answers FundRequest: the being's name, the amount applied
// under the key and what remained right after it (Duplicate: the key was
// applied before, and these are the first application's). Err is a
// refusal (control.ErrRefused: a failed being) or why the being cannot
// take it now (control.ErrBusy: it is stopping).
type FundResponse struct {
	Name              string
	Amount, Remaining money.Amount
	Duplicate         bool
	Err               error
}

// MessageRequest asks a being to take a message into its inbox
// (docs/family.md#messages). The being answers MessageResponse only once
// message_received is durable; an id it received before is answered
// Duplicate, and nothing is written.
type MessageRequest struct {
	Message state.InMessage
}

func (r MessageRequest) String() string {
	return fmt.Sprintf("MessageRequest{%s from %s}", r.Message.ID, r.Message.From)
}

// MessageResponse answers MessageRequest: the receiver's name, and
// whether it had the message already. Ended answers a relative's
// message (one with a Relation) to a being whose life ended (exhausted
// or failed): it took nothing, and its sender drops the message. Err is
// as FundResponse's.
type MessageResponse struct {
	Name      string
	Duplicate bool
	Ended     bool
	Err       error
}

// ReviveChild tells a parent that its ended child ID was funded while
// its actor was gone (docs/money.md#funding): the parent starts it
// again, in Run, as soon as the old actor has ended.
type ReviveChild struct{ ID string }

// BeingEnded tells a parent that its child ID ended its life exhausted
// but keeps its actor, dormant, under its family's hold
// (docs/cluster.md#placement): a being loads once a hold, and only its
// own actor can take the fund that makes it live again. The parent
// counts it as ended (it takes no relative's message) and still alive.
type BeingEnded struct{ ID string }

// BeingRevived tells a parent that its dormant child ID lives again in
// the same actor: a fund un-ended it (docs/money.md#funding).
type BeingRevived struct{ ID string }
