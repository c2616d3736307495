package las

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// mailboxThroughput is how many messages one run of the mailbox handles
// before it yields, as protoactor's default dispatcher.
const mailboxThroughput = 300

// worker is the dispatcher of one Las actor: it runs the actor's mailbox
// on one goroutine that lives as long as the actor, where protoactor's
// default starts a fresh goroutine whenever the mailbox wakes. A fresh
// goroutine starts on a small stack and grows it (copying it each time)
// as the handler decodes or encodes a line: in the round-trip benchmark
// that was about a third of the client's CPU per call. The long-lived
// goroutine keeps the stack it grew. It starts with the first message
// and ends when the actor stops (stop, from *actor.Stopped); anything
// the mailbox schedules after that runs the default way.
type worker struct {
	mu      sync.Mutex
	jobs    chan func()
	started bool
	stopped bool
}

var _ actor.Dispatcher = (*worker)(nil)

func newWorker() *worker { return &worker{jobs: make(chan func(), 1)} }

// Schedule hands the mailbox's run to the worker goroutine. The mailbox
// schedules at most one run at a time and the next only once that run
// has marked the mailbox idle, so one slot is enough; a full slot all
// the same falls back to a fresh goroutine rather than blocking the
// sender.
func (w *worker) Schedule(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		go fn()
		return
	}
	if !w.started {
		w.started = true
		go w.run()
	}
	select {
	case w.jobs <- fn:
	default:
		go fn()
	}
}

func (w *worker) Throughput() int { return mailboxThroughput }

func (w *worker) run() {
	for fn := range w.jobs {
		fn()
	}
}

// stop lets the worker goroutine end once the run in progress (the one
// that delivered *actor.Stopped) returns.
func (w *worker) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.jobs)
	}
}
