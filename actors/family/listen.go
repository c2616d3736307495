package family

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Listen spawns, at system's root, a listener for a family
// (Options.Listener) that hands every message it is sent to the command
// that waits for the family, in order, on the returned channel. Its
// queue has no bound, so the family never waits for the command. stop
// ends the listener and closes the channel.
func Listen(system *actor.ActorSystem) (pid *actor.PID, events <-chan any, stop func()) {
	q := &queue{ready: make(chan struct{}, 1), done: make(chan struct{})}
	out := make(chan any)
	go q.pump(out)
	var once sync.Once
	end := func() { once.Do(func() { close(q.done) }) }
	pid = system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case *actor.Stopped:
			end()
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			q.put(ctx.Message())
		}
	}))
	return pid, out, func() {
		system.Root.Stop(pid)
		end()
	}
}

// queue is the listener's unbounded queue between its actor and the
// channel.
type queue struct {
	mu    sync.Mutex
	items []any
	ready chan struct{} // a put happened since the pump last looked
	done  chan struct{}
}

func (q *queue) put(msg any) {
	q.mu.Lock()
	q.items = append(q.items, msg)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pump hands the queue's items to out, in order, until done.
func (q *queue) pump(out chan<- any) {
	defer close(out)
	for {
		q.mu.Lock()
		var next any
		have := len(q.items) > 0
		if have {
			next = q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
		}
		q.mu.Unlock()
		if !have {
			select {
			case <-q.ready:
				continue
			case <-q.done:
				return
			}
		}
		select {
		case out <- next:
		case <-q.done:
			return
		}
	}
}
