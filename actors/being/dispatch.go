package being

import "sync/atomic"

// mailboxThroughput is how many messages one run of a being's mailbox
// handles before it yields, as protoactor's default dispatcher.
const mailboxThroughput = 300

// maxParked bounds the goroutines the pool keeps between runs.
const maxParked = 16

// mailboxes runs the mailboxes of every being in the process. A being's
// mailbox wakes several times a round (a completion, a durable write, a
// tool's result), and protoactor's default dispatcher starts a fresh
// goroutine each time; a fresh goroutine starts on a small stack and
// grows it, copying it each time, as the being encodes a step or a
// request. The pool hands a run to a goroutine parked after an earlier
// run, which keeps the stack it grew, and starts a fresh one only when
// none is parked, so a run never waits for another. However many beings
// live, at most maxParked goroutines stay parked.
var mailboxes = &warmPool{runs: make(chan func())}

// warmPool is a protoactor dispatcher that reuses goroutines.
type warmPool struct {
	runs   chan func() // unbuffered: a send succeeds only to a parked goroutine
	parked atomic.Int32
}

// Schedule runs fn on a parked goroutine, else on a new one; it never
// blocks.
func (p *warmPool) Schedule(fn func()) {
	select {
	case p.runs <- fn:
	default:
		go p.work(fn)
	}
}

// Throughput is the messages per run.
func (p *warmPool) Throughput() int { return mailboxThroughput }

// work runs fn, then parks for the next run unless maxParked goroutines
// are parked already.
func (p *warmPool) work(fn func()) {
	for {
		fn()
		if p.parked.Add(1) > maxParked {
			p.parked.Add(-1)
			return
		}
		fn = <-p.runs
		p.parked.Add(-1)
	}
}
