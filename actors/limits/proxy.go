package limits

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/messages"
)

// Locate finds the member that holds the family's one limiter: the
// address its remote listens at (docs/cluster.md#beings-spread-over-members).
type Locate func(ctx context.Context) (address string, err error)

// DefaultProxyDeadline bounds one admission asked of another member:
// finding it and its answer.
const DefaultProxyDeadline = 2 * time.Second

// unreachedWait is how long a being waits to ask again when the
// family's limiter could not be asked.
const unreachedWait = time.Second

// Proxy stands in, on each member of a family spread over members, for
// the family's one limiter, which runs on the member that holds its
// lock. It answers what the Limiter answers, asking the limiter over
// protoactor-go's remote as clusterpb messages from a worker goroutine
// each, so a slow member never holds its mailbox. A limiter that cannot
// be found or does not answer within the deadline admits nothing: the
// being is told to ask again in a second.
type Proxy struct {
	remote   *actor.ActorSystem
	locate   Locate
	deadline time.Duration
	// unreached counts admissions that found no limiter, for the debug
	// tree.
	unreached uint64
}

// ProxyProps returns the proxy's props: remote is the member's actor
// system that protoactor-go's remote serves; deadline zero means
// DefaultProxyDeadline.
func ProxyProps(remote *actor.ActorSystem, locate Locate, deadline time.Duration) *actor.Props {
	if deadline <= 0 {
		deadline = DefaultProxyDeadline
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Proxy{remote: remote, locate: locate, deadline: deadline}
	})
}

// Receive dispatches one message.
func (p *Proxy) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case messages.SpendRequest:
		p.admit(ctx, msg)
	case messages.SpendSettled:
		p.settle(msg)
	case unreached:
		p.unreached++
	case messages.DescribeRequest:
		ctx.Respond(messages.Description{Kind: "limits", Name: Name, Status: "running",
			Figures: map[string]any{"limiter": "the family's, on the member that holds its lock", "unreached": p.unreached}})
	}
}

// unreached is a worker's word that the limiter could not be asked.
type unreached struct{}

func (p *Proxy) admit(ctx actor.Context, msg messages.SpendRequest) {
	asker, self, system := ctx.Sender(), ctx.Self(), ctx.ActorSystem()
	if asker == nil {
		return
	}
	go func() {
		resp, err := p.ask(msg)
		if err != nil {
			system.Root.Send(self, unreached{})
			resp = messages.SpendResponse{RetryAfter: unreachedWait}
		}
		system.Root.Send(asker, resp)
	}()
}

// ask asks the family's limiter to admit msg, within the deadline.
func (p *Proxy) ask(msg messages.SpendRequest) (messages.SpendResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.deadline)
	defer cancel()
	address, err := p.locate(ctx)
	if err != nil {
		return messages.SpendResponse{}, err
	}
	left := time.Until(deadlineOf(ctx))
	reply, err := p.remote.Root.RequestFuture(actor.NewPID(address, Name), ToWire(msg), left).Result()
	if err != nil {
		return messages.SpendResponse{}, fmt.Errorf("the limiter at %s did not answer: %w", address, err)
	}
	w, ok := reply.(*clusterpb.SpendResponse)
	if !ok {
		return messages.SpendResponse{}, fmt.Errorf("the limiter at %s answered %T", address, reply)
	}
	return ResponseFromWire(w), nil
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// settle tells the limiter what an admission cost; a limiter that
// cannot be found is not told (a new limiter starts a new window).
func (p *Proxy) settle(msg messages.SpendSettled) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.deadline)
		defer cancel()
		if address, err := p.locate(ctx); err == nil {
			p.remote.Root.Send(actor.NewPID(address, Name), SettledToWire(msg))
		}
	}()
}
