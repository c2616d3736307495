package fence

import (
	"context"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxBatch is the most beings one batched transaction commits for:
// etcd refuses a transaction of more than 128 operations a branch
// (--max-txn-ops' default), and each being is one compare and one put.
const MaxBatch = 128

// Batcher commits the steps of a member's beings together: the commits
// that arrive while a transaction is in flight go into the next one, one
// compare and one put per being (at most MaxBatch, one commit per being
// each). When a batched transaction's compares fail, each of its commits
// is tried again in a transaction of its own, all at once, so that only
// the fenced beings are fenced. A batch whose transaction fails or times
// out is ErrOutcomeUnknown for every being in it. Its methods are safe
// for concurrent use.
type Batcher struct {
	s    *Session
	wake chan struct{} // a commit is queued (capacity one)
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	queue  []*request
	closed bool

	txns, commits atomic.Int64
}

// request is one being's commit waiting for its batch.
type request struct {
	lock  *Lock
	seq   uint64
	reply chan error // buffered: the loop never waits on it
}

// NewBatcher starts the batcher of s's beings; Close stops it.
func NewBatcher(s *Session) *Batcher {
	b := &Batcher{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Close stops the batcher once its transaction in flight ended; commits
// still queued are ErrClosed (nothing of them was sent).
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
}

// Stats is how many transactions the batcher ran (batched and single)
// and how many commits they carried.
func (b *Batcher) Stats() (txns, commits int64) { return b.txns.Load(), b.commits.Load() }

// commit queues l's commit and waits for its outcome.
func (b *Batcher) commit(l *Lock, seq uint64) error {
	r := &request{lock: l, seq: seq, reply: make(chan error, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // a wake is pending already
	}
	return <-r.reply
}

func (b *Batcher) loop() {
	defer close(b.done)
	for {
		select {
		case <-b.stop:
			b.mu.Lock()
			queued := b.queue
			b.queue = nil
			b.mu.Unlock()
			for _, r := range queued {
				r.reply <- ErrClosed
			}
			return
		case <-b.wake:
		}
		batch := b.take()
		if len(batch) > 0 {
			b.run(batch)
		}
	}
}

// take removes the next batch from the queue: what queued, in order, up
// to MaxBatch and one commit per being. What stays queued wakes the loop
// again.
func (b *Batcher) take() []*request {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch, rest []*request
	seen := make(map[*Lock]bool, len(b.queue))
	for _, r := range b.queue {
		if len(batch) == MaxBatch || seen[r.lock] {
			rest = append(rest, r)
			continue
		}
		seen[r.lock] = true
		batch = append(batch, r)
	}
	b.queue = rest
	if len(rest) > 0 {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return batch
}

// run commits one batch and answers each of its requests.
func (b *Batcher) run(batch []*request) {
	b.commits.Add(int64(len(batch)))
	if len(batch) == 1 {
		b.txns.Add(1)
		r := batch[0]
		r.reply <- commitOne(r.lock, r.seq, false)
		return
	}
	cmps := make([]clientv3.Cmp, len(batch))
	puts := make([]clientv3.Op, len(batch))
	for i, r := range batch {
		cmps[i], puts[i] = guard(r.lock), put(r.lock, r.seq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.CommitTimeout)
	resp, err := b.s.client.Txn(ctx).If(cmps...).Then(puts...).Commit()
	cancel()
	b.txns.Add(1)
	if err != nil || resp.Succeeded {
		for _, r := range batch {
			r.reply <- outcome(r.lock, r.seq, resp, err)
		}
		return
	}
	// One compare or more failed, and nothing was written: find the
	// fenced beings by a transaction each.
	var wg sync.WaitGroup
	for _, r := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.reply <- commitOne(r.lock, r.seq, false)
		}()
	}
	wg.Wait()
	b.txns.Add(int64(len(batch)))
}
