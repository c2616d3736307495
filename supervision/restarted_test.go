package supervision

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// crashOnce is a supervised child that panics with the error it is sent
// and reports each Restarted it reads, with how many Started
// all its incarnations have handled by then (shared across them).
type crashOnce struct {
	news    chan<- restartNews
	started *atomic.Int32
}

type restartNews struct {
	Restarted
	startedBefore int32
}

func (c *crashOnce) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.started.Add(1)
	case Restarted:
		c.news <- restartNews{m, c.started.Load()}
	case error:
		panic(m)
	}
}

// parentOf spawns child under a parent supervising with
// ForBeingChildren, the strategy every being applies.
type parentOf struct {
	name    string
	news    chan<- restartNews
	pid     chan<- *actor.PID
	started *atomic.Int32
}

func (p *parentOf) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		child, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &crashOnce{news: p.news, started: p.started} }), p.name)
		if err != nil {
			panic(err)
		}
		p.pid <- child
	}
}

// TestRestartNewsReachesEveryRestartedChild: Las and a child being hear
// of their restarts through the same message, sent by the strategy to
// the new incarnation, with the running count and the last reason.
func TestRestartNewsReachesEveryRestartedChild(t *testing.T) {
	fast := Backoff{Initial: time.Millisecond, Max: time.Millisecond, Jitter: -1}
	for _, name := range []string{LasChildName, ChildBeingPrefix + "Bo-1a2b3c4d"} {
		t.Run(name, func(t *testing.T) {
			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			defer system.Shutdown()
			news := make(chan restartNews, 4)
			pids := make(chan *actor.PID, 1)
			var started atomic.Int32
			strategy := ForBeingChildren(BeingChildrenConfig{
				Las:   LasConfig{Backoff: fast},
				Child: ChildBeingConfig{Backoff: fast},
			})
			props := actor.PropsFromProducer(func() actor.Actor { return &parentOf{name: name, news: news, pid: pids, started: &started} }, actor.WithSupervisor(strategy))
			parent := system.Root.Spawn(props)
			defer system.Root.Stop(parent)
			var child *actor.PID
			select {
			case child = <-pids:
			case <-time.After(10 * time.Second):
				t.Fatal("the child was not spawned")
			}

			for n, reason := range []string{"first failure", "second failure"} {
				system.Root.Send(child, errors.New(reason))
				select {
				case got := <-news:
					require.Equal(t, Restarted{Restarts: n + 1, Reason: reason}, got.Restarted)
					require.Equal(t, int32(n+2), got.startedBefore, "the news of restart %d comes after that incarnation's Started", n+1)
				case <-time.After(10 * time.Second):
					t.Fatalf("no restart news after %q", reason)
				}
			}
		})
	}
}
