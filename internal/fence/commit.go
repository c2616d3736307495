package fence

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/durable"
)

// Committer fences the steps of one held being: it is the durable
// engine's Fence (durable.Config.Fence), asked once a step is appended
// and fsynced. Its first ErrFenced or ErrOutcomeUnknown is final: every
// later call answers the same error without asking etcd, so a being
// whose engine tries the step again stays stopped.
type Committer struct {
	lock  *Lock
	batch *Batcher

	mu  sync.Mutex
	err error
}

var _ durable.StepFence = (*Committer)(nil)

// NewCommitter returns the fence of l's steps: through b, with the
// other beings of the member committing at the same time, or with a
// transaction of its own when b is nil.
func NewCommitter(l *Lock, b *Batcher) *Committer { return &Committer{lock: l, batch: b} }

// Fence commits the step ending with event seq last under the lock's
// token: nil once the commit record holds {token, last}, else an error
// wrapping ErrFenced or ErrOutcomeUnknown (or ErrClosed: nothing was
// sent). The engine calls it one step at a time.
func (c *Committer) Fence(last uint64) error { return c.fence(last, nil, false) }

// fence commits the step ending with last, registering children with
// it, and taking the being's ended/ mark away when unend is set (a
// transaction of its own then).
func (c *Committer) fence(last uint64, children []string, unend bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	var err error
	select {
	case <-c.lock.s.Done():
		// The member fences itself: its lease is gone, or about to be.
		err = fmt.Errorf("commit of being %s: the member's session ended: %w", c.lock.being, ErrFenced)
	default:
		if c.batch != nil && len(children) == 0 && !unend {
			err = c.batch.commit(c.lock, last)
		} else {
			err = commitOne(c.lock, last, unend, children...)
		}
	}
	if err != nil {
		c.err = err
	}
	return err
}

// Err is the committer's final error, nil while it commits.
func (c *Committer) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// guard is the compare that holds while l is held.
func guard(l *Lock) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", int64(l.token))
}

// put writes l's commit record for a step ending with seq.
func put(l *Lock, seq uint64) clientv3.Op {
	return clientv3.OpPut(l.s.keys.commit(l.being), Record{Token: l.token, Seq: seq}.encode())
}

// commitOne runs l's commit in a transaction of its own, registering
// children with it, and taking the being's ended/ mark away when unend
// is set.
func commitOne(l *Lock, seq uint64, unend bool, children ...string) error {
	ops, err := registrations(l, children)
	if err != nil {
		return err
	}
	if unend {
		ops = append(ops, clientv3.OpDelete(l.s.keys.end(l.being)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.s.cfg.CommitTimeout)
	defer cancel()
	resp, err := l.s.client.Txn(ctx).If(guard(l)).Then(append(ops, put(l, seq))...).Commit()
	return outcome(l, seq, resp, err)
}

// outcome names what a commit's transaction came to.
func outcome(l *Lock, seq uint64, resp *clientv3.TxnResponse, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("commit of being %s at seq %d under token %d: %w: %w", l.being, seq, l.token, ErrOutcomeUnknown, err)
	case !resp.Succeeded:
		return fmt.Errorf("commit of being %s at seq %d under token %d: %w", l.being, seq, l.token, ErrFenced)
	}
	return nil
}
