package being

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/messages"
)

// Messages to relatives (docs/family.md#messages). singularity_message_send
// journals message_sent in the step of its call: the journal is the
// outbox (state.Being.Outbox). Once that step is durable the message
// goes to its receiver as a messages.MessageRequest, which the receiver
// answers once its message_received is durable, or at once when it had
// the message already; the sender then journals message_delivered with
// its next step. Until then the message is sent again: after a wait
// that doubles from redeliverFirst to redeliverMax while the receiver
// does not answer, and at every start. So every message sent is
// received exactly once: at least once by the resends, at most once by
// the receiver's dropping an id it has.

// Waits between resends of the undelivered messages.
const (
	redeliverFirst = time.Second
	redeliverMax   = time.Minute
)

// post is the delivery of the outbox in progress: the messages asked
// and not answered yet, the message_delivered events waiting for the
// next step, and the timer of the next resend with its wait.
type post struct {
	inflight map[string]bool
	done     []state.Event
	retry    func() bool
	backoff  time.Duration
}

// redeliver sends the undelivered messages again; epoch ties it to the
// incarnation that scheduled it.
type redeliver struct{ epoch uint64 }

// family is what message_send needs to know of the being's parent.
func (b *Being) family() builtin.Family {
	id, _ := b.parent()
	return builtin.Family{ParentID: id}
}

// parent is the being's parent: its id and its state directory (empty
// for the root). A child lives in <parent>/children/<id>; the parent is
// itself a child when its own directory is one of children/, else the
// root, whose id is the agent id every being of the family shares.
func (b *Being) parent() (id, dir string) {
	if !b.isChild() {
		return "", ""
	}
	dir = filepath.Dir(filepath.Dir(b.opts.StateDir))
	if filepath.Base(filepath.Dir(dir)) == "children" {
		return filepath.Base(dir), dir
	}
	return b.st.Identity.AgentID, dir
}

// sendMessage finishes a message_send call: failed recipient_ended when
// the recipient is a child known to have ended, else success with
// message_sent in the call's step, which delivers it once durable
// (delivering).
func (b *Being) sendMessage(ctx actor.Context, s builtin.Send) {
	res := s.Sent()
	if ref := b.child(s.To.ID); !s.To.Parent && ref != nil && ref.ended {
		res = s.Ended()
	}
	b.toolDone(ctx, toolResult{outcome: res.Outcome, changes: res.Changes})
}

// lifeEnded reports whether the being's life ended: its applied status
// is exhausted or failed (a fund may un-end an exhausted one).
func (b *Being) lifeEnded() bool {
	return b.st != nil && (b.st.Status == state.StatusExhausted || b.st.Status == state.StatusFailed)
}

// child is the child of id, nil when there is none.
func (b *Being) child(id string) *childRef {
	for _, ref := range b.children {
		if ref.id == id {
			return ref
		}
	}
	return nil
}

// delivering sends the messages of a durable step's message_sent events.
func (b *Being) delivering(ctx actor.Context, events []state.Event) {
	for _, e := range events {
		if e.Type == state.EventMessageSent {
			b.deliver(ctx, state.OutMessage{ID: e.ID, To: e.To, Text: e.Text})
		}
	}
}

// deliverOutbox sends every undelivered message.
func (b *Being) deliverOutbox(ctx actor.Context) {
	for _, m := range b.st.Outbox {
		b.deliver(ctx, m)
	}
}

// deliver asks m's receiver to take it, unless it is asked already. A
// being in once mode delivers nothing: its relatives do not run, and
// its outbox goes out at the next run.
func (b *Being) deliver(ctx actor.Context, m state.OutMessage) {
	if b.post.inflight[m.ID] || b.opts.Mode == Once || b.phase == phaseStopped {
		return
	}
	if ref := b.child(m.To); ref != nil && ref.ended && !b.opts.placement().ChildrenElsewhere() {
		// It ended after the message was sent: it will never take it.
		b.deliveryAnswered(ctx, m.ID, messages.MessageResponse{Ended: true}, nil)
		return
	}
	pid, req := b.route(ctx, m)
	if pid == nil {
		b.redeliverLater(ctx)
		return
	}
	if b.post.inflight == nil {
		b.post.inflight = map[string]bool{}
	}
	b.post.inflight[m.ID] = true
	// The answer is handled with the message's id, which a timeout's
	// error would not carry: the one reply handled by a closure.
	epoch := b.epoch
	future := ctx.RequestFuture(pid, req, askTimeout)
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch == epoch {
			b.deliveryAnswered(ctx, m.ID, res, err)
		}
	})
}

// route is where m goes and what is sent: to the parent, the actor's
// parent; to a child, its actor while it runs (nil when it does not).
// In a family spread over members a being's relatives are not its
// actor's: the request goes through its family, which hands it to the
// receiver when its member runs it (messages.RelayMessage).
func (b *Being) route(ctx actor.Context, m state.OutMessage) (*actor.PID, any) {
	in := state.InMessage{ID: m.ID, From: b.beingID(), Name: b.st.Identity.Name, Text: m.Text}
	var (
		dir string
		pid *actor.PID
	)
	if parentID, parentDir := b.parent(); parentID != "" && m.To == parentID {
		in.Relation = builtin.RelationChild
		dir, pid = parentDir, ctx.Parent()
	} else {
		in.Relation = builtin.RelationParent
		dir = filepath.Join(b.opts.StateDir, state.ChildRecordDir(m.To))
		if ref := b.child(m.To); ref != nil && ref.alive() {
			pid = ref.pid
		}
	}
	req := messages.MessageRequest{Message: in}
	if b.opts.placement().ChildrenElsewhere() {
		return ctx.Parent(), messages.RelayMessage{Dir: dir, Request: req}
	}
	return pid, req
}

// deliveryAnswered takes the receiver's answer to message id: taken (or
// had already), or ended, either of which takes it out of the outbox;
// anything else (no answer in time, not here, busy stopping) sends it
// again later.
func (b *Being) deliveryAnswered(ctx actor.Context, id string, res any, err error) {
	delete(b.post.inflight, id)
	r, ok := res.(messages.MessageResponse)
	if err != nil || !ok || r.Err != nil {
		b.redeliverLater(ctx)
		return
	}
	b.post.backoff = 0
	if b.opts.Mode == Dormant {
		// It writes nothing: the message goes again at its next start,
		// and its receiver drops it.
		return
	}
	out := slices.IndexFunc(b.st.Outbox, func(m state.OutMessage) bool { return m.ID == id })
	queued := slices.ContainsFunc(b.post.done, func(e state.Event) bool { return e.ID == id })
	if out < 0 || queued {
		return
	}
	e := state.MessageDelivered(state.Time{}, 0, id)
	if r.Ended {
		e.Reason = builtin.CodeRecipientEnded
		b.warn("message " + id + " not delivered: its receiver " + b.st.Outbox[out].To + " has ended")
	}
	b.post.done = append(b.post.done, e)
	b.flushWarnings(ctx)
}

// takeDelivered returns the message_delivered events waiting for a step,
// which carries them from now on.
func (b *Being) takeDelivered() []state.Event {
	done := b.post.done
	b.post.done = nil
	return done
}

// redeliverLater schedules the next resend of the undelivered messages,
// unless one is scheduled.
func (b *Being) redeliverLater(ctx actor.Context) {
	if b.post.retry != nil || b.opts.Mode == Once || b.phase == phaseStopped {
		return
	}
	b.post.backoff = min(max(2*b.post.backoff, redeliverFirst), redeliverMax)
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	b.post.retry = b.opts.clockAfter(b.post.backoff, func() { system.Root.Send(self, redeliver{epoch}) })
}

// handleRedeliver sends the undelivered messages again.
func (b *Being) handleRedeliver(ctx actor.Context, msg redeliver) {
	if msg.epoch != b.epoch {
		return
	}
	b.post.retry = nil
	b.deliverOutbox(ctx)
}

// stopRedelivery cancels the next resend (the incarnation ends).
func (b *Being) stopRedelivery() {
	if b.post.retry != nil {
		b.post.retry()
		b.post.retry = nil
	}
}
