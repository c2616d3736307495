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
		holder, held, err := member.Holder(ctx, session, member.BeingID(root, dir))
		switch {
		case err != nil:
			return messages.MessageResponse{Err: control.ErrBusy}
		case held && holder.Name != self:
			m := req.Message
			relay := control.Request{Op: control.OpRelay, Being: rel, Key: m.ID, Text: m.Text, From: m.From, Name: m.Name, Relation: m.Relation}
			deadline, _ := ctx.Deadline()
			reply, err := memberlink.Relay(system, holder.Address, relay, time.Until(deadline))
			switch {
			case err != nil, reply.Busy, reply.Refusal != "", reply.Failure != "":
				return messages.MessageResponse{Err: control.ErrBusy}
			case reply.NotHere:
				// The holder has the lock but not the being yet (it is
				// loading it), or lets it go.
				return messages.MessageNotHere{}
			}
			return messages.MessageResponse{Name: reply.Name, Duplicate: reply.Duplicate, Ended: reply.Ended}
		case held:
			// This member holds the lock but not the being: it is
			// loading it, or letting it go.
			return messages.MessageNotHere{}
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
