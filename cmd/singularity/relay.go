package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/memberlink"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// memberRelay carries a relative's message from the member self of a
// family spread over members to the member that holds its receiver
// (docs/cluster.md#messages-between-relatives), on whatever machine it
// runs: it finds the holder of the receiver's lock in session's etcd
// and asks that member's link (memberlink.Relay, from system, the
// member's remote-served actor system) with a control.OpRelay request,
// and answers what the holder answered. A holder that is busy (the
// receiver stops, or the member does) or does not answer in time makes
// the answer busy, so the sender asks again soon. When no other member
// holds the receiver, ended (nil: never) says whether its life ended,
// which answers Ended (the sender drops the message); otherwise the
// answer is messages.MessageNotHere.
func memberRelay(root, self string, session *fence.Session, system *actor.ActorSystem, ended func(ctx context.Context, dir string) bool) func(dir string, req messages.MessageRequest, limit time.Duration) any {
	return func(dir string, req messages.MessageRequest, limit time.Duration) any {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return messages.MessageNotHere{}
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		m := req.Message
		relay := control.Request{Op: control.OpRelay, Being: rel, Key: m.ID, Text: m.Text, From: m.From, Name: m.Name, Relation: m.Relation}
		reply, held, err := askHolder(ctx, session, system, member.BeingID(root, dir), self, relay)
		switch {
		case err != nil, reply.Busy, reply.Refusal != "", reply.Failure != "":
			return messages.MessageResponse{Err: control.ErrBusy}
		case reply.NotHere:
			// The holder has the lock but not the being yet (it is
			// loading it), or lets it go; or this member holds the
			// lock and not the being, for the same reasons.
			return messages.MessageNotHere{}
		case held:
			return messages.MessageResponse{Name: reply.Name, Duplicate: reply.Duplicate, Ended: reply.Ended}
		}
		if ended != nil && ended(ctx, dir) {
			return messages.MessageResponse{Ended: true}
		}
		return messages.MessageNotHere{}
	}
}

// endedIn says whether the being living in dir under root has ended, by
// its ended/ mark in the family's etcd (exhausted or failed); an etcd
// that does not answer says no, and the message is sent again later.
func endedIn(session *fence.Session, root string) func(ctx context.Context, dir string) bool {
	return func(ctx context.Context, dir string) bool {
		ended, err := session.EndedBeings(ctx)
		if err != nil {
			return false
		}
		status := ended[member.BeingID(root, dir)]
		return status == state.StatusExhausted || status == state.StatusFailed
	}
}

// askHolder carries req to the member that holds lock (a being's id in
// etcd) through its link, and answers what it answered; held says a
// member holds the lock. When none does, the reply is zero; when this
// member (self) does, it is NotHere: this member answered already. An
// etcd or a holder that does not answer in time is err.
func askHolder(ctx context.Context, session *fence.Session, system *actor.ActorSystem, lock, self string, req control.Request) (reply control.Reply, held bool, err error) {
	holder, held, err := member.Holder(ctx, session, lock)
	switch {
	case err != nil:
		return control.Reply{}, false, err
	case !held:
		return control.Reply{}, false, nil
	case holder.Name == self:
		return control.Reply{NotHere: true}, true, nil
	}
	deadline, _ := ctx.Deadline()
	reply, err = memberlink.Relay(system, holder.Address, req, time.Until(deadline))
	return reply, true, err
}

// forwardToHolder carries an operator's request for a being this member
// does not hold to the member that holds it now
// (docs/cluster.md#the-operators-channel): the holder of the being's own
// lock in a family spread over members (spread), of the root's lock
// when one member holds the whole family. A holder that does not answer
// makes the reply busy, so the command asks again (the being may be
// between members); with no holder, or this member holding the lock
// itself, the reply is NotHere.
func forwardToHolder(ctx context.Context, session *fence.Session, system *actor.ActorSystem, root, self string, spread bool, req control.Request) control.Reply {
	lock := member.RootBeing
	if spread {
		lock = member.BeingID(root, filepath.Join(root, req.Being))
	}
	reply, held, err := askHolder(ctx, session, system, lock, self, req)
	switch {
	case err != nil:
		return control.Reply{Busy: true}
	case !held:
		return control.Reply{NotHere: true}
	}
	return reply
}
