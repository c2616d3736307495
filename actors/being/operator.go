package being

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// What comes to a being from outside its cycle: the operator's funds
// (docs/money.md#funding) and the messages of the operator or of a
// relative (docs/family.md#messages). Each is decided on the applied
// state (control.DecideFund, control.DecideMessage), journaled as a step
// of its own between cycles, and answered only once durable and
// applied. A key or a message id seen before is answered at once and
// writes nothing; one already waiting for its step is answered with it.

// inbound is one fund or message waiting for its step: its event, and
// who waits for the answer.
type inbound struct {
	event   state.Event
	waiters []*actor.PID
}

// handleFund takes a fund (messages.FundRequest).
func (b *Being) handleFund(ctx actor.Context, msg messages.FundRequest) {
	if err := b.refuseInbound(); err != nil {
		ctx.Respond(messages.FundResponse{Err: err})
		return
	}
	if b.waitInbound(ctx, state.EventFunded, msg.Key) {
		return
	}
	e, err := control.DecideFund(b.st, msg.Amount, msg.Key, msg.Note, b.opts.now())
	if err != nil || e == nil {
		ctx.Respond(b.fundAnswer(msg.Key, true, err))
		return
	}
	b.queueInbound(ctx, *e)
}

// handleMessage takes a message into the inbox (messages.MessageRequest).
func (b *Being) handleMessage(ctx actor.Context, msg messages.MessageRequest) {
	if msg.Message.Relation != "" && b.lifeEnded() {
		// A relative's message is refused once the being ended; the
		// operator's is taken (a fund may revive it).
		ctx.Respond(messages.MessageResponse{Name: b.st.Identity.Name, Ended: true})
		return
	}
	if err := b.refuseInbound(); err != nil {
		ctx.Respond(messages.MessageResponse{Err: err})
		return
	}
	if b.waitInbound(ctx, state.EventMessageReceived, msg.Message.ID) {
		return
	}
	e := control.DecideMessage(b.st, msg.Message, b.opts.now())
	if e == nil {
		ctx.Respond(messages.MessageResponse{Name: b.st.Identity.Name, Duplicate: true})
		return
	}
	b.queueInbound(ctx, *e)
}

// refuseInbound says why the being cannot take a fund or a message now:
// not loaded yet, or stopping (control.ErrBusy: the sender asks again,
// and once the actor is gone applies it to the directory itself).
func (b *Being) refuseInbound() error {
	if b.st == nil || b.engine == nil || !b.engine.Opened() || b.stop != nil || b.phase >= phaseStoppingChildren {
		return control.ErrBusy
	}
	return nil
}

// waitInbound adds the sender to the waiters of the queued event of
// type kind with key (a fund's key, a message's id), if there is one.
func (b *Being) waitInbound(ctx actor.Context, kind, key string) bool {
	for _, in := range b.inbound {
		if in.event.Type == kind && (in.event.Key == key && kind == state.EventFunded || in.event.ID == key && kind == state.EventMessageReceived) {
			in.waiters = append(in.waiters, ctx.Sender())
			return true
		}
	}
	return false
}

// queueInbound queues e for its step, which starts at once when the
// being is between cycles and no write is in flight.
func (b *Being) queueInbound(ctx actor.Context, e state.Event) {
	b.inbound = append(b.inbound, &inbound{event: e, waiters: []*actor.PID{ctx.Sender()}})
	b.flushInbound(ctx)
}

// flushInbound journals every queued fund and message as one step when
// the being is between cycles (a dormant one too) and no write is in
// flight; otherwise the step comes when the write lands or the cycle
// ends (wrote).
func (b *Being) flushInbound(ctx actor.Context) {
	if len(b.inbound) == 0 || b.engine.Busy() || b.phase != phaseIdle || b.stop != nil || (!b.booted && b.opts.Mode != Dormant) {
		return
	}
	events := make([]state.Event, len(b.inbound))
	for i, in := range b.inbound {
		events[i] = in.event
	}
	b.flushing = b.inbound
	b.inbound = nil
	b.onDurable(ctx, b.engine.Step(nextOperator, events, b.opts.now(), b.st.Cycle))
}

// operatorDurable answers the funds and messages of a durable step. A
// dormant being that a fund un-ended lives again in this actor
// (awaken, revive.go).
func (b *Being) operatorDurable(ctx actor.Context) {
	for _, in := range b.flushing {
		var answer any
		if in.event.Type == state.EventFunded {
			answer = b.fundAnswer(in.event.Key, false, nil)
		} else {
			answer = messages.MessageResponse{Name: b.st.Identity.Name}
		}
		for _, w := range in.waiters {
			if w != nil {
				ctx.Send(w, answer)
			}
		}
	}
	b.flushing = nil
	if b.opts.Mode == Dormant && !b.lifeEnded() {
		b.awaken(ctx)
		return
	}
	b.rouse(ctx) // a sleep that wakes on messages ends (sleep.go)
}

// fundAnswer is the answer to a fund under key from the applied state.
func (b *Being) fundAnswer(key string, dup bool, err error) messages.FundResponse {
	r := messages.FundResponse{Name: b.st.Identity.Name, Duplicate: dup, Err: err}
	if f := b.st.FundOf(key); f != nil {
		r.Amount, r.Remaining = f.Amount, f.Remaining
	}
	return r
}

// failInbound answers every fund and message still waiting for its step
// with err (a stop began): none of them was written. A step in flight
// lands first and is answered as usual.
func (b *Being) failInbound(ctx actor.Context, err error) {
	b.answerInbound(ctx, b.inbound, err)
	b.inbound = nil
}

// fencedInbound answers every fund and message still waiting, its step
// in flight included, with err: a fence refused a step, and whether that
// one counted is the next holder's to say; the sender asks again with
// the same key, which is not applied twice.
func (b *Being) fencedInbound(ctx actor.Context, err error) {
	b.answerInbound(ctx, append(b.inbound, b.flushing...), err)
	b.inbound, b.flushing = nil, nil
}

// answerInbound answers the waiters of each of ins with err.
func (b *Being) answerInbound(ctx actor.Context, ins []*inbound, err error) {
	for _, in := range ins {
		for _, w := range in.waiters {
			if w == nil {
				continue
			}
			if in.event.Type == state.EventFunded {
				ctx.Send(w, messages.FundResponse{Err: err})
			} else {
				ctx.Send(w, messages.MessageResponse{Err: err})
			}
		}
	}
}
