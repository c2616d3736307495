package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// memberRelay carries a relative's message from the member self of a
// family spread over members to the member that holds its receiver
// (docs/cluster.md#messages-between-relatives): it offers it, as a
// control.OpRelay request, to every other member's control socket in
// the shared state root root, and answers what the first member running
// the receiver answered. A member that is busy (the receiver stops, or
// the member does) makes the answer busy, so the sender asks again
// soon. When no member runs the receiver, ended (nil: never) says
// whether its life ended, which answers Ended (the sender drops the
// message); otherwise the answer is messages.MessageNotHere.
func memberRelay(root, self string, ended func(ctx context.Context, dir string) bool) func(dir string, req messages.MessageRequest, limit time.Duration) any {
	own := control.MemberSocket(self)
	return func(dir string, req messages.MessageRequest, limit time.Duration) any {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return messages.MessageNotHere{}
		}
		m := req.Message
		relay := control.Request{Op: control.OpRelay, Being: rel, Key: m.ID, Text: m.Text, From: m.From, Name: m.Name, Relation: m.Relation}
		deadline := time.Now().Add(limit)
		sockets, _ := filepath.Glob(filepath.Join(root, control.MemberSockets))
		busy := false
		for _, socket := range sockets {
			if filepath.Base(socket) == own || time.Until(deadline) <= 0 {
				continue
			}
			reply, err := control.Ask(socket, relay, time.Until(deadline))
			switch {
			case err != nil, reply.NotHere:
				// A socket a killed member left, or a member that does
				// not run the receiver.
			case reply.Busy, reply.Refusal != "", reply.Failure != "":
				busy = true
			default:
				return messages.MessageResponse{Name: reply.Name, Duplicate: reply.Duplicate, Ended: reply.Ended}
			}
		}
		if busy {
			return messages.MessageResponse{Err: control.ErrBusy}
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
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
