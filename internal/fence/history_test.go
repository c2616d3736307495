package fence

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/test/etcdtest"
)

// TestHistoryKeepsOnePeriod: each tick compacts etcd's history to what
// the tick before saw, never further; the commit records and a lock
// taken after it work as before; a history compacted further by another
// member is no error.
func TestHistoryKeepsOnePeriod(t *testing.T) {
	srv := etcdtest.Start(t)
	s := member(t, srv, "fam")
	ctx := ctxFor(t, 30*time.Second)
	l := lock(t, s, "b1")
	c := NewCommitter(l, nil)
	step := uint64(0)
	commit := func(n int) int64 {
		for range n {
			step++
			require.NoError(t, c.Fence(step))
		}
		resp, err := s.client.Get(ctx, "any")
		require.NoError(t, err)
		return resp.Header.Revision
	}
	h := NewHistory(s)

	before := commit(5)
	compacted, err := h.Tick(ctx)
	require.NoError(t, err)
	assert.Zero(t, compacted, "the first tick only looks")
	seen := commit(5)

	compacted, err = h.Tick(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, compacted, before, "the history before the first tick is gone")
	require.Less(t, compacted, seen, "what came after the first tick is kept")
	_, err = s.client.Get(ctx, s.keys.commit("b1"), clientv3.WithRev(compacted-1))
	require.ErrorIs(t, err, rpctypes.ErrCompacted)
	old, err := s.client.Get(ctx, s.keys.commit("b1"), clientv3.WithRev(compacted))
	require.NoError(t, err)
	require.Len(t, old.Kvs, 1)

	token, got, err := s.Committed(ctx, "b1")
	require.NoError(t, err)
	assert.Equal(t, [2]uint64{l.Token(), step}, [2]uint64{token, got}, "the commit record reads as before")
	commit(1)

	// Another member compacted further: this member's tick is no error.
	latest := commit(3)
	_, err = member(t, srv, "fam").client.Compact(ctx, latest)
	require.NoError(t, err)
	_, err = h.Tick(ctx)
	require.NoError(t, err)

	// A standby waiting for the lock while the history before its wait
	// is compacted takes it when it is let go. (A compaction past the
	// revision its wait began at, within etcd's 100 ms before its watch
	// is caught up, would end the wait with ErrCompacted; a holder's
	// period keeps far more history than that.)
	commit(1) // latest+1, which the next tick sees
	_, err = h.Tick(ctx)
	require.NoError(t, err)
	other := member(t, srv, "fam")
	taken := make(chan error, 1)
	go func() {
		l2, err := other.Lock(ctxFor(t, 20*time.Second), "b1")
		if err == nil && l2.Token() <= l.Token() {
			err = fmt.Errorf("token %d after %d", l2.Token(), l.Token())
		}
		taken <- err
	}()
	require.Eventually(t, func() bool {
		resp, err := s.client.Get(ctx, s.keys.lockPrefix("b1")+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	}, 10*time.Second, 10*time.Millisecond, "the standby waits")
	commit(2)
	compacted, err = h.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, latest+1, compacted, "the revision the tick before saw")
	require.NoError(t, l.Unlock(ctx))
	select {
	case err := <-taken:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the waiting member did not take the lock")
	}
}
