// Package mailbox is the protoactor dispatcher of the runtime's
// long-lived actors, the beings and their Las actors.
//
// An actor's mailbox wakes several times a round (a completion, a durable
// write, a tool's result, a line from an MCP server), and protoactor's
// default dispatcher starts a fresh goroutine each time. A fresh
// goroutine starts on a small stack and grows it, copying it each time,
// as the actor encodes or decodes a step, a request or a line. Pool hands
// a run to a goroutine parked after an earlier run, which keeps the
// stack it grew, and starts a fresh one only when none is parked, so a
// run never waits for another.
package mailbox

import "sync/atomic"

// Throughput is how many messages one run of a mailbox handles before it
// yields, as protoactor's default dispatcher.
const Throughput = 300

// MaxParked bounds the goroutines a Pool keeps parked between runs.
const MaxParked = 16

// Shared is the pool of every being and Las actor in the process: however
// many actors live, at most MaxParked goroutines stay parked.
var Shared = New()

// Pool is a protoactor dispatcher (actor.Dispatcher, which it satisfies
// without importing the runtime) that reuses goroutines. The zero value
// is not usable; call New.
type Pool struct {
	runs   chan func() // unbuffered: a send succeeds only to a parked goroutine
	parked atomic.Int32
}

// New returns an empty pool.
func New() *Pool { return &Pool{runs: make(chan func())} }

// Schedule runs fn on a parked goroutine, else on a new one; it never
// blocks.
func (p *Pool) Schedule(fn func()) {
	select {
	case p.runs <- fn:
	default:
		go p.work(fn)
	}
}

// Throughput is the messages per run.
func (p *Pool) Throughput() int { return Throughput }

// work runs fn, then parks for the next run unless MaxParked goroutines
// are parked already.
func (p *Pool) work(fn func()) {
	for {
		fn()
		if p.parked.Add(1) > MaxParked {
			p.parked.Add(-1)
			return
		}
		fn = <-p.runs
		p.parked.Add(-1)
	}
}
