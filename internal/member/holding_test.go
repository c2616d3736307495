package member

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

// TestHolding: every being of a held family loads as the root lock's
// holder and commits its own record under the root's token; a second
// load of one being (its restart) loses the hold; a step refused loses it
// too.
func TestHolding(t *testing.T) {
	srv := etcdtest.Start(t)
	root := testkit.BootedDir(t)
	child := filepath.Join(root, "children", "0b4f6c1e-2a51-4b7e-9d1c-1f7a2e3b4c5d")
	require.NoError(t, os.MkdirAll(filepath.Dir(child), 0o700))
	require.NoError(t, os.Rename(testkit.BootedDir(t), child))

	s := session(t, srv, "fam")
	lock, err := s.Lock(ctxFor(t), RootBeing)
	require.NoError(t, err)
	hold := NewHolding(s, lock, nil, root, 5*time.Second)
	require.Equal(t, lock.Token(), hold.Token())

	for _, dir := range []string{root, child} {
		held, f, err := hold.Hold(dir)
		require.NoError(t, err)
		require.Equal(t, lock.Token(), held.Token)
		// What is on disk (a fresh being: no event yet) is committed
		// again, as its holder's.
		require.NoError(t, f.Fence(held.Next-1), "a step commits under the root's lock")
		token, seq, err := s.Committed(ctxFor(t), BeingID(root, dir))
		require.NoError(t, err)
		require.Equal(t, [2]uint64{lock.Token(), held.Next - 1}, [2]uint64{token, seq}, "the being's own record")
	}
	require.NoError(t, hold.Err())

	t.Run("a restart loses the hold", func(t *testing.T) {
		_, _, err := hold.Hold(child)
		require.ErrorContains(t, err, "restarted under token")
		select {
		case <-hold.Lost():
		default:
			t.Fatal("the hold is not lost")
		}
		require.Equal(t, err, hold.Err())
	})

	t.Run("a refused step loses the hold", func(t *testing.T) {
		s := session(t, srv, "fam")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, lock.Unlock(ctx))
		other, err := s.Lock(ctx, RootBeing)
		require.NoError(t, err)
		again := NewHolding(s, other, nil, root, 5*time.Second)
		held, f, err := again.Hold(root)
		require.NoError(t, err)
		stale := NewHolding(s, lock, nil, root, 5*time.Second)
		_, staleFence, err := stale.Hold(child)
		require.NoError(t, err)
		require.ErrorIs(t, staleFence.Fence(held.Next+10), fence.ErrFenced)
		<-stale.Lost()
		require.True(t, errors.Is(stale.Err(), fence.ErrFenced))
		require.NoError(t, f.Fence(held.Next-1), "the new holder commits")
	})
}

// TestHoldWaitsForASlowEtcd: a commit record that does not come within
// the holding's timeout is asked for again, with more time, so a slow
// etcd leaves no being out; once the hold is lost, the wait ends with an
// error.
func TestHoldWaitsForASlowEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	root := testkit.BootedDir(t)
	s := session(t, srv, "fam")
	lock, err := s.Lock(ctxFor(t), RootBeing)
	require.NoError(t, err)

	// No answer from etcd comes within a microsecond.
	hold := NewHolding(s, lock, nil, root, time.Microsecond)
	held, _, err := hold.Hold(root)
	require.NoError(t, err)
	require.Equal(t, lock.Token(), held.Token)

	lost := NewHolding(s, lock, nil, root, time.Microsecond)
	lost.lose(errors.New("a step was refused"))
	_, _, err = lost.Hold(root)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "the hold is lost: a step was refused")
}

// TestFreshLeavesAnotherHoldersFirstState: a first holder frozen between
// its look at the root and its write finds, awake, the first state a
// second holder wrote meanwhile. It leaves that state as it is and says
// nothing is wrong (its first step will be fenced), where a plain
// creation would have refused with "state already exists"; on a root
// that has its first state it writes nothing either.
func TestFreshLeavesAnotherHoldersFirstState(t *testing.T) {
	root := t.TempDir()
	id := testkit.Identity()
	fresh := func(name string) func() (*state.Being, error) {
		return func() (*state.Being, error) {
			b := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusStarting, JournalSeq: new(uint64)}
			b.Mind.SystemPrompt = name
			return b, nil
		}
	}
	second := fresh("second")
	first := func() (*state.Being, error) {
		// The second holder writes while the first is between its look
		// and its write.
		require.NoError(t, Fresh(root, id, second))
		return fresh("first")()
	}
	require.NoError(t, Fresh(root, id, first))
	got, err := state.Load(root)
	require.NoError(t, err)
	require.Equal(t, "second", got.Mind.SystemPrompt, "the second holder's first state is left as it is")

	require.NoError(t, Fresh(root, id, fresh("third")))
	got, err = state.Load(root)
	require.NoError(t, err)
	require.Equal(t, "second", got.Mind.SystemPrompt)

	_, _, _, err = state.Boot(root, false, id, fresh("plain"))
	require.ErrorIs(t, err, state.ErrExists)
	require.EqualError(t, err, "state: state already exists at "+filepath.Join(root, state.StateFile)+"; use --resume or a new directory")
}
