package main

import (
	"path/filepath"
	"time"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/messages"
)

// memberRelay carries a relative's message from the member self of a
// family spread over members to the member that holds its receiver
// (docs/cluster.md#messages-between-relatives): it offers it, as a
// control.OpRelay request, to every other member's control socket in
// the shared state root root, and answers what the first member running
// the receiver answered. A member that is busy (the receiver stops, or
// the member does) makes the answer busy, so the sender asks again
// soon; none running it answers messages.MessageNotHere.
func memberRelay(root, self string) func(dir string, req messages.MessageRequest, limit time.Duration) any {
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
		return messages.MessageNotHere{}
	}
}
