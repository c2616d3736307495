// Package memberlink is the actor through which the other members of a
// family across processes reach this one (docs/cluster.md#messages-between-members):
// they ask it for the family's tree, and relay control requests (a
// relative's message, an operator's fund or say) to the beings it holds.
// It lives on the member's own actor system, which protoactor-go's
// remote serves at the member's --cluster-bind address, under the name
// Name; everything it receives and answers is a clusterpb message.
package memberlink

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/wire/clusterpb"
)

// Name is the link's actor name on every member: a member reaches
// another at actor.NewPID(<its address>, Name).
const Name = "member"

// DefaultDeadline bounds how long the link takes to answer one request,
// and how long an asker waits for the answer.
const DefaultDeadline = 2 * time.Second

// Shown says what this member shows of its family now: the tree it
// serves on GET /debug/actors when it holds the family, Holding false
// when it does not. It is called outside the actor, once per request,
// with a deadline.
type Shown func(ctx context.Context, asker string) *clusterpb.FamilyTree

// MaxRelayDeadline caps the deadline a relayed request asks for: the
// link answers within it whatever the asker says.
const MaxRelayDeadline = 30 * time.Second

// Link is the actor. It answers:
//
//	*clusterpb.FamilyTreeRequest → *clusterpb.FamilyTree
//	*clusterpb.RelayRequest      → *clusterpb.RelayReply
//
// Each answer is made by a worker goroutine and sent to the asker, so a
// slow collection of the tree, or a being's durable step, never holds
// the link's mailbox.
type Link struct {
	shown    Shown
	relayed  control.Handler
	deadline time.Duration
}

// Props returns the link's props. relayed carries out a relayed control
// request as the member's control socket does, within the deadline of
// its context (nine tenths of the asker's wait, which is at most
// MaxRelayDeadline; deadline when the asker names none); nil answers
// every one NotHere. deadline zero means DefaultDeadline.
func Props(shown Shown, relayed control.Handler, deadline time.Duration) *actor.Props {
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	if relayed == nil {
		relayed = func(context.Context, control.Request) control.Reply { return control.Reply{NotHere: true} }
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Link{shown: shown, relayed: relayed, deadline: deadline}
	})
}

// Receive dispatches one message.
func (l *Link) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *clusterpb.FamilyTreeRequest:
		l.handleTree(ctx, msg)
	case *clusterpb.RelayRequest:
		l.handleRelay(ctx, msg)
	}
}

func (l *Link) handleTree(ctx actor.Context, msg *clusterpb.FamilyTreeRequest) {
	asker := ctx.Sender()
	if asker == nil {
		return // sent, not asked: nobody to answer
	}
	root := ctx.ActorSystem().Root
	go func() {
		c, cancel := context.WithTimeout(context.Background(), l.deadline)
		defer cancel()
		root.Send(asker, l.shown(c, msg.GetAsker()))
	}()
}

// handleRelay carries out a relayed control request on a worker: a
// request that is not one of the control protocol is refused, as the
// control socket refuses it.
func (l *Link) handleRelay(ctx actor.Context, msg *clusterpb.RelayRequest) {
	asker := ctx.Sender()
	if asker == nil {
		return
	}
	root := ctx.ActorSystem().Root
	limit := min(time.Duration(msg.GetDeadlineMs())*time.Millisecond, MaxRelayDeadline)
	if limit <= 0 {
		limit = l.deadline
	}
	// A tenth is left for the reply's way back, so that it comes
	// before the asker stops waiting.
	limit -= limit / 10
	go func() {
		var req control.Request
		var reply control.Reply
		if err := json.Unmarshal(msg.GetRequestJson(), &req); err != nil {
			reply = control.Reply{Refusal: "the request is not one JSON request of the control protocol"}
		} else if err := req.Check(); err != nil {
			reply = control.Reply{Refusal: err.Error()}
		} else {
			c, cancel := context.WithTimeout(context.Background(), limit)
			reply = l.relayed(c, req)
			cancel()
		}
		raw, err := json.Marshal(reply)
		if err != nil {
			raw, _ = json.Marshal(control.Reply{Failure: "the reply cannot be encoded: " + err.Error()})
		}
		root.Send(asker, &clusterpb.RelayReply{ReplyJson: raw})
	}()
}

// Serve starts protoactor-go's remote for system at bind (host:port;
// port 0 picks a free one) and spawns the link there. It returns the
// address other members reach this one at, and the remote's stop. A
// bind that cannot be listened on is an error naming it.
//
// The link answers relayed control requests with relayed (see Props).
func Serve(system *actor.ActorSystem, bind string, shown Shown, relayed control.Handler) (address string, stop func(), err error) {
	host, portText, err := net.SplitHostPort(bind)
	if err != nil {
		return "", nil, fmt.Errorf("cannot listen on %s: %w", bind, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", nil, fmt.Errorf("cannot listen on %s: the port is not a number", bind)
	}
	r := remote.NewRemote(system, remote.Configure(host, port))
	if err := start(r); err != nil {
		return "", nil, fmt.Errorf("cannot listen on %s: %w", bind, err)
	}
	stop = func() { r.Shutdown(false) }
	if _, err := system.Root.SpawnNamed(Props(shown, relayed, 0), Name); err != nil {
		stop()
		return "", nil, fmt.Errorf("cannot spawn the member link: %w", err)
	}
	return system.ProcessRegistry.Address, stop, nil
}

// start is remote.Start, whose one failure (the listen) is a panic.
func start(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}

// Ask asks the member at address for its family's tree, waiting at most
// deadline (zero means DefaultDeadline).
func Ask(system *actor.ActorSystem, address, asker string, deadline time.Duration) (*clusterpb.FamilyTree, error) {
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	reply, err := system.Root.RequestFuture(actor.NewPID(address, Name), &clusterpb.FamilyTreeRequest{Asker: asker}, deadline).Result()
	if err != nil {
		return nil, fmt.Errorf("the member at %s did not answer within %s: %w", address, deadline, err)
	}
	tree, ok := reply.(*clusterpb.FamilyTree)
	if !ok {
		return nil, fmt.Errorf("the member at %s answered %T, not a family tree", address, reply)
	}
	return tree, nil
}

// Relay asks the member at address to carry out req on a being it holds,
// as its control socket would, and waits for its reply at most deadline:
// the reply comes once the effect is durable, or says the member does
// not hold the being (NotHere) or is busy. An error is a member that did
// not answer in time (the effect may have taken place: the same key or
// message id is not applied twice) or answered what it was not asked.
func Relay(system *actor.ActorSystem, address string, req control.Request, deadline time.Duration) (control.Reply, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return control.Reply{}, fmt.Errorf("the request cannot be encoded: %w", err)
	}
	ask := &clusterpb.RelayRequest{RequestJson: raw, DeadlineMs: deadline.Milliseconds()}
	res, err := system.Root.RequestFuture(actor.NewPID(address, Name), ask, deadline).Result()
	if err != nil {
		return control.Reply{}, fmt.Errorf("the member at %s did not answer within %s: %w", address, deadline, err)
	}
	answer, ok := res.(*clusterpb.RelayReply)
	if !ok {
		return control.Reply{}, fmt.Errorf("the member at %s answered %T, not a relay reply", address, res)
	}
	var reply control.Reply
	if err := json.Unmarshal(answer.GetReplyJson(), &reply); err != nil {
		return control.Reply{}, fmt.Errorf("the member at %s answered a reply this member cannot read: %w", address, err)
	}
	return reply, nil
}
