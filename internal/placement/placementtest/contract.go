// Package placementtest is the contract every placement.Store keeps:
// Run runs it against a family a test makes, in memory
// (placement.Memory) or on a real etcd (internal/fence).
package placementtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/placement"
)

// Family is one empty family of the Store under test.
type Family interface {
	// Join adds a live member of the family and returns its store.
	Join(t *testing.T, name string) placement.Store
	// Register records child as the child of the being l locks, under
	// l, as the committed step recording the child does.
	Register(t *testing.T, l placement.Lock, child string)
	// Expire ends s's member as a lost lease does.
	Expire(t *testing.T, s placement.Store)
}

// Run runs the contract against the families newFamily makes, a new
// one for each case.
func Run(t *testing.T, newFamily func(t *testing.T) Family) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f Family)
	}{
		{"an empty family counts its members and places its root", emptyFamily},
		{"a lock is taken once, and only free locks are taken", locksAreExclusive},
		{"a lock let go is free again", unlockFrees},
		{"registrations, ends and stops are read back", recordsReadBack},
		{"a lock no longer held records nothing", notHeldRecordsNothing},
		{"a member that leaves is not counted and its beings are listed", leaving},
		{"an expired member's locks are free", expiry},
		{"a watch wakes at a lock let go and at a registration", watch},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newFamily(t)) })
	}
}

// timeout bounds every call of the contract.
const timeout = 10 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return c
}

func look(t *testing.T, s placement.Store) placement.Placement {
	t.Helper()
	p, err := s.Look(ctx(t))
	require.NoError(t, err)
	return p
}

func lockAll(t *testing.T, s placement.Store, beings ...string) map[string]placement.Lock {
	t.Helper()
	got, err := s.TryLockAll(ctx(t), beings)
	require.NoError(t, err)
	return got
}

func emptyFamily(t *testing.T, f Family) {
	a := f.Join(t, "m1")
	f.Join(t, "m2")
	p := look(t, a)
	assert.Equal(t, 2, p.Members)
	assert.Empty(t, p.Registered)
	assert.Empty(t, p.Locked)
	assert.False(t, p.FamilyEnded)
	assert.Equal(t, []string{placement.RootBeing}, p.Placeable())
}

func locksAreExclusive(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	got := lockAll(t, a, placement.RootBeing)
	require.Contains(t, got, placement.RootBeing)
	assert.Equal(t, placement.RootBeing, got[placement.RootBeing].Being())
	assert.NotZero(t, got[placement.RootBeing].Token())
	f.Register(t, got[placement.RootBeing], "c1")
	f.Register(t, got[placement.RootBeing], "c2")

	again := lockAll(t, a, placement.RootBeing)
	assert.Empty(t, again, "a lock the member holds is skipped")
	other := lockAll(t, b, placement.RootBeing, "c1")
	assert.NotContains(t, other, placement.RootBeing, "another member's lock is not taken")
	require.Contains(t, other, "c1")
	assert.Greater(t, other["c1"].Token(), got[placement.RootBeing].Token(), "tokens grow")

	pa, pb := look(t, a), look(t, b)
	assert.Equal(t, map[string]bool{"c1": true}, pa.Locked, "own locks are not counted as locked")
	assert.Equal(t, map[string]bool{placement.RootBeing: true}, pb.Locked)

	_, err := a.TryLockAll(ctx(t), make([]string, placement.MaxTryAll+1))
	assert.Error(t, err, "more than MaxTryAll at once")
}

func unlockFrees(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	got := lockAll(t, a, placement.RootBeing)
	require.NoError(t, got[placement.RootBeing].Unlock(ctx(t)))
	assert.Empty(t, look(t, b).Locked)
	assert.Contains(t, lockAll(t, b, placement.RootBeing), placement.RootBeing)
}

func recordsReadBack(t *testing.T, f Family) {
	a := f.Join(t, "m1")
	root := lockAll(t, a, placement.RootBeing)[placement.RootBeing]
	f.Register(t, root, "c1")
	f.Register(t, root, "c2")
	child := lockAll(t, a, "c1")["c1"]
	require.NotNil(t, child)
	f.Register(t, child, "g1")
	p := look(t, a)
	assert.Equal(t, map[string]string{"c1": placement.RootBeing, "c2": placement.RootBeing, "g1": "c1"}, p.Registered)
	assert.Equal(t, []string{placement.RootBeing, "c1", "c2", "g1"}, p.Placeable())
	assert.False(t, p.ChildrenEnded("c1"))

	require.NoError(t, a.StopChildren(ctx(t), child))
	assert.Equal(t, map[string]bool{"c1": true}, look(t, a).Stopping)
	g := lockAll(t, a, "g1")["g1"]
	require.NoError(t, a.End(ctx(t), g, "exhausted"))
	p = look(t, a)
	assert.Equal(t, map[string]string{"g1": "exhausted"}, p.Ended)
	assert.True(t, p.ChildrenEnded("c1"))
	assert.Equal(t, []string{placement.RootBeing, "c1", "c2"}, p.Placeable())
	assert.False(t, p.FamilyEnded)

	require.NoError(t, a.End(ctx(t), root, "exhausted"))
	assert.True(t, look(t, a).FamilyEnded, "the root's end is the family's")
}

func notHeldRecordsNothing(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	root := lockAll(t, a, placement.RootBeing)[placement.RootBeing]
	f.Register(t, root, "c1")
	c := lockAll(t, a, "c1")["c1"]
	require.NoError(t, c.Unlock(ctx(t)))
	taken := lockAll(t, b, "c1")
	require.Contains(t, taken, "c1")

	err := a.End(ctx(t), c, "exhausted")
	assert.True(t, errors.Is(err, placement.ErrNotHeld), "End under a lock let go: %v", err)
	err = a.StopChildren(ctx(t), c)
	assert.True(t, errors.Is(err, placement.ErrNotHeld), "StopChildren under a lock let go: %v", err)
	p := look(t, b)
	assert.Empty(t, p.Ended)
	assert.Empty(t, p.Stopping)
}

func leaving(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	root := lockAll(t, a, placement.RootBeing)[placement.RootBeing]
	f.Register(t, root, "c1")
	lockAll(t, b, "c1")
	require.NoError(t, a.MarkLeaving(ctx(t)))
	p := look(t, b)
	assert.Equal(t, 1, p.Members)
	assert.Equal(t, map[string]bool{placement.RootBeing: true}, p.LeavingHeld)
	assert.Equal(t, map[string]bool{placement.RootBeing: true}, look(t, a).LeavingHeld, "the leaver sees its own")
}

func expiry(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	lockAll(t, a, placement.RootBeing)
	f.Expire(t, a)
	p := look(t, b)
	assert.Equal(t, 1, p.Members)
	assert.Empty(t, p.Locked)
	assert.Contains(t, lockAll(t, b, placement.RootBeing), placement.RootBeing)
}

func watch(t *testing.T, f Family) {
	a, b := f.Join(t, "m1"), f.Join(t, "m2")
	root := lockAll(t, a, placement.RootBeing)[placement.RootBeing]
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := b.Watch(wctx)
	drain(woken)
	f.Register(t, root, "c1")
	awaitWake(t, woken, "a registration")
	drain(woken)
	require.NoError(t, root.Unlock(ctx(t)))
	awaitWake(t, woken, "a lock let go")
}

// drain empties a watch's channel of wakes that came before.
func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func awaitWake(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(timeout):
		t.Fatalf("the watch did not wake at %s within %s", what, timeout)
	}
}
