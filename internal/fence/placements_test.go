package fence

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/placement/placementtest"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
)

// etcdFamily is a family of the placement contract on a real etcd: each
// member a session of its own, its record as internal/member writes it.
type etcdFamily struct {
	srv    *etcdtest.Server
	family string
	seqs   map[string]uint64 // the last seq committed by each being
}

func (f *etcdFamily) Join(t *testing.T, name string) placement.Store {
	s := member(t, f.srv, f.family)
	rec := fmt.Sprintf(`{"name":%q,"lease":%q}`, name, leaseHex(s.Lease()))
	_, err := s.client.Put(ctxFor(t, 10*time.Second), s.keys.member(name), rec, clientv3.WithLease(clientv3.LeaseID(s.Lease())))
	require.NoError(t, err)
	return NewPlacements(s)
}

// Register commits a step of the parent recording the child: the
// registration goes with that commit.
func (f *etcdFamily) Register(t *testing.T, l placement.Lock, child string) {
	fl := l.(*Lock)
	f.seqs[fl.being]++
	added := state.ChildAdded(state.Child{ID: child, Name: child})
	added.Seq = f.seqs[fl.being]
	require.NoError(t, NewCommitter(fl, nil).FenceStep([]state.Event{added}))
}

func (f *etcdFamily) Expire(t *testing.T, s placement.Store) {
	require.NoError(t, s.(Placements).s.Close())
}

// TestPlacementsKeepTheContract runs the placement store's contract on a
// real etcd on loopback, a family of its own for each case.
func TestPlacementsKeepTheContract(t *testing.T) {
	srv := etcdtest.Start(t)
	var n atomic.Int64
	placementtest.Run(t, func(t *testing.T) placementtest.Family {
		return &etcdFamily{srv: srv, family: fmt.Sprintf("fam%d", n.Add(1)), seqs: map[string]uint64{}}
	})
}

// TestLookCountsOnlyOtherMembersLocks reads a lock key this member's
// lease left behind (an attempt that ran out of time) as its own: the
// member's next attempt takes it over, so it keeps no being from it.
func TestLookCountsOnlyOtherMembersLocks(t *testing.T) {
	srv := etcdtest.Start(t)
	s := member(t, srv, "fam")
	_, err := s.client.Put(ctxFor(t, 10*time.Second), s.lockKey("kid"), "", clientv3.WithLease(clientv3.LeaseID(s.Lease())))
	require.NoError(t, err)
	seen, err := NewPlacements(s).Look(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	assert.Empty(t, seen.Locked)
	status, ended, err := s.FamilyEnded(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	assert.False(t, ended)
	assert.Empty(t, status)
}
