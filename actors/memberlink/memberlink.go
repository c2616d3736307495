// Package memberlink is the actor through which the other members of a
// family across processes reach this one (docs/cluster.md#messages-between-members).
// It lives on the member's own actor system, which protoactor-go's
// remote serves at the member's --cluster-bind address, under the name
// Name; everything it receives and answers is a clusterpb message.
package memberlink

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

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

// Link is the actor. It answers:
//
//	*clusterpb.FamilyTreeRequest → *clusterpb.FamilyTree
//
// Each answer is made by a worker goroutine and sent to the asker, so a
// slow collection of the tree never holds the link's mailbox.
type Link struct {
	shown    Shown
	deadline time.Duration
}

// Props returns the link's props; deadline zero means DefaultDeadline.
func Props(shown Shown, deadline time.Duration) *actor.Props {
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Link{shown: shown, deadline: deadline}
	})
}

// Receive dispatches one message.
func (l *Link) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *clusterpb.FamilyTreeRequest:
		l.handleTree(ctx, msg)
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

// Serve starts protoactor-go's remote for system at bind (host:port;
// port 0 picks a free one) and spawns the link there. It returns the
// address other members reach this one at, and the remote's stop. A
// bind that cannot be listened on is an error naming it.
func Serve(system *actor.ActorSystem, bind string, shown Shown) (address string, stop func(), err error) {
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
	if _, err := system.Root.SpawnNamed(Props(shown, 0), Name); err != nil {
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
