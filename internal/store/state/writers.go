package state

import "sync"

// DefaultWriters is the size of a family's writer pool.
const DefaultWriters = 64

// Writers is a bounded pool of goroutines that do a family's durable
// writes (docs/state.md#the-journal): beings hand it jobs and hear back
// by message, so no actor blocks in fsync and however many beings live
// in the process, at most Size goroutines (and so OS threads) sit in a
// write or an fsync. Jobs run in the order they were queued; a being
// queues one at a time, so its own writes stay in order.
type Writers struct {
	mu     sync.Mutex
	ready  sync.Cond
	queue  []func()
	closed bool
	done   sync.WaitGroup
}

// NewWriters starts a pool of n goroutines (n < 1 means DefaultWriters).
func NewWriters(n int) *Writers {
	if n < 1 {
		n = DefaultWriters
	}
	w := &Writers{}
	w.ready.L = &w.mu
	w.done.Add(n)
	for range n {
		go w.work()
	}
	return w
}

// Do queues job; it never blocks. After Close, job runs on a goroutine
// of its own, so a late writer still finishes.
func (w *Writers) Do(job func()) {
	if w == nil {
		go job()
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		go job()
		return
	}
	w.queue = append(w.queue, job)
	w.mu.Unlock()
	w.ready.Signal()
}

// Backlogged reports whether jobs are waiting for a goroutine: every one
// is busy. A nil pool (a goroutine per job) never is.
func (w *Writers) Backlogged() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) > 0
}

// Close lets the goroutines finish the queued jobs and waits for them.
func (w *Writers) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.ready.Broadcast()
	w.done.Wait()
}

func (w *Writers) work() {
	defer w.done.Done()
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.ready.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		job := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		job()
	}
}
