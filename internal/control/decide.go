package control

import (
	"slices"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// Decide is what req does to the being whose applied state is st: the
// event to journal, or nil when there is none (a key already applied, a
// message already received). The reply, once that event is durable and
// applied, is Answer's. Decide changes nothing.
func Decide(st *state.Being, req Request, at state.Time) (*state.Event, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	if req.Op == OpFund {
		return DecideFund(st, req.Amount, req.Key, req.Note, at)
	}
	m := state.InMessage{ID: req.Key, From: state.FromOperator, Text: req.Text}
	if req.Op == OpRelay {
		m.From, m.Name, m.Relation = req.From, req.Name, req.Relation
	}
	return DecideMessage(st, m, at), nil
}

// DecideFund is the funded event that adds amount under key to the
// being whose applied state is st (docs/money.md#funding); nil when key
// was applied before. A failed being is refused: failed beings are not
// revived.
func DecideFund(st *state.Being, amount money.Amount, key, note string, at state.Time) (*state.Event, error) {
	if st.FundOf(key) != nil {
		return nil, nil
	}
	if st.Status == state.StatusFailed {
		return nil, refused("%s has failed, and a failed being is not revived by a fund; nothing was added", st.Identity.Name)
	}
	e := state.Funded(at, st.Cycle, amount, key, note)
	return &e, nil
}

// DecideMessage is the message_received event that takes m into the
// inbox of the being whose applied state is st
// (docs/family.md#messages); nil when its id was received before.
func DecideMessage(st *state.Being, m state.InMessage, at state.Time) *state.Event {
	if slices.Contains(st.Received, m.ID) {
		return nil
	}
	e := state.MessageReceived(at, st.Cycle, m)
	return &e
}

// Answer is the reply to req from the being's state st once the event
// Decide gave (if any) is applied; dup says Decide gave none.
func Answer(st *state.Being, req Request, dup bool) Reply {
	r := Reply{Name: st.Identity.Name, Key: req.Key, Duplicate: dup}
	if req.Op == OpFund {
		if f := st.FundOf(req.Key); f != nil {
			r.Amount, r.Remaining = f.Amount, f.Remaining
		}
	}
	return r
}
