package member

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
)

func TestShare(t *testing.T) {
	for _, c := range []struct{ beings, members, want int }{
		{0, 3, 0}, {1, 3, 1}, {3, 3, 1}, {4, 3, 2}, {300, 3, 100}, {301, 3, 101}, {5, 0, 5},
	} {
		assert.Equal(t, c.want, Share(c.beings, c.members), "%d beings over %d members", c.beings, c.members)
	}
}

func TestPlan(t *testing.T) {
	family := func(members int, locked ...string) Placement {
		p := Placement{Members: members, Registered: map[string]string{"a": RootBeing, "b": RootBeing, "c": "a"},
			Ended: map[string]string{"d": "exhausted"}, Locked: map[string]bool{}}
		p.Registered["d"] = "c"
		for _, id := range locked {
			p.Locked[id] = true
		}
		return p
	}
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, c := range []struct {
		name      string
		p         Placement
		mine      map[string]bool
		releasing int
		take      []string
		give      int
	}{
		{"alone: everything but the ended", family(1), set(), 0, []string{RootBeing, "a", "b", "c"}, 0},
		{"two members: half, root first", family(2), set(), 0, []string{RootBeing, "a"}, 0},
		{"locked beings are skipped", family(2, RootBeing, "a"), set(), 0, []string{"b", "c"}, 0},
		{"a full share takes nothing", family(2, RootBeing, "a"), set(RootBeing, "a"), 0, nil, 0},
		{"beyond the share is given back", family(4, RootBeing, "a", "b"), set(RootBeing, "a", "b"), 0, nil, 2},
		{"what is given back already counts", family(4, RootBeing, "a", "b"), set(RootBeing, "a", "b"), 2, nil, 0},
		{"an ended family takes nothing", Placement{Members: 1, FamilyEnded: true}, set(), 0, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			take, give := c.p.Plan(c.mine, c.releasing)
			assert.Equal(t, c.take, take)
			assert.Equal(t, c.give, give)
		})
	}
}

func TestDir(t *testing.T) {
	reg := map[string]string{"a": RootBeing, "c": "a", "x": "y", "p": "q", "q": "p"}
	root := filepath.Join("/srv", "family")
	dir, err := Dir(root, reg, RootBeing)
	require.NoError(t, err)
	assert.Equal(t, root, dir)
	dir, err = Dir(root, reg, "c")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "children", "a", "children", "c"), dir)
	_, err = Dir(root, reg, "x")
	assert.ErrorContains(t, err, "being y is not registered")
	_, err = Dir(root, reg, "p")
	assert.ErrorContains(t, err, "circle")
}

// TestLook reads a spread family's placement from a real etcd: the live
// members, the registrations a commit made, the ended beings, the beings
// stopping for good, and the locks of other members, not this member's
// own.
func TestLook(t *testing.T) {
	srv := etcdtest.Start(t)
	root := t.TempDir()
	a, b := session(t, srv, "fam"), session(t, srv, "fam")
	for i, s := range []*fence.Session{a, b} {
		_, err := Join(ctxFor(t), s, "fam", Config{Name: fmt.Sprintf("m%d", i+1), Root: root, Placement: "being"})
		require.NoError(t, err)
	}
	rootLock, err := a.Lock(ctxFor(t), RootBeing)
	require.NoError(t, err)
	commit := fence.NewCommitter(rootLock, nil)
	kid := state.ChildAdded(state.Child{ID: "kid", Name: "Kid"})
	kid.Seq = 1
	require.NoError(t, commit.FenceStep([]state.Event{kid}))
	other := state.ChildAdded(state.Child{ID: "gone", Name: "Gone"})
	other.Seq = 2
	require.NoError(t, commit.FenceStep([]state.Event{other}))
	gone, err := b.Lock(ctxFor(t), "gone")
	require.NoError(t, err)
	require.NoError(t, gone.End(ctxFor(t), state.StatusExhausted))
	require.NoError(t, rootLock.StopChildren(ctxFor(t)))

	seen, err := Look(ctxFor(t), b)
	require.NoError(t, err)
	assert.Equal(t, 2, seen.Members)
	assert.Equal(t, map[string]string{"kid": RootBeing, "gone": RootBeing}, seen.Registered)
	assert.Equal(t, map[string]string{"gone": state.StatusExhausted}, seen.Ended)
	assert.Equal(t, map[string]bool{RootBeing: true}, seen.Locked, "its own lock on gone is not another member's")
	assert.Equal(t, map[string]bool{RootBeing: true}, seen.Stopping)
	assert.False(t, seen.FamilyEnded)
	assert.Equal(t, []string{RootBeing, "kid"}, seen.Placeable())
	assert.False(t, seen.ChildrenEnded(RootBeing), "kid has not ended")
	assert.True(t, seen.ChildrenEnded("kid"), "a being with no children")
	assert.Empty(t, seen.LeavingHeld)

	// a leaves: b is the only member that stays, and a's beings are
	// held by a member that leaves, as b's own are once b leaves too.
	require.NoError(t, MarkLeaving(ctxFor(t), a))
	seen, err = Look(ctxFor(t), b)
	require.NoError(t, err)
	assert.Equal(t, 1, seen.Members)
	assert.Equal(t, map[string]bool{RootBeing: true}, seen.LeavingHeld)
	require.NoError(t, MarkLeaving(ctxFor(t), b))
	seen, err = Look(ctxFor(t), b)
	require.NoError(t, err)
	assert.Zero(t, seen.Members)
	assert.Equal(t, map[string]bool{RootBeing: true, "gone": true}, seen.LeavingHeld)

	ended := NewHolding(a, rootLock, nil, root, time.Second)
	require.NoError(t, ended.End(ctxFor(t), state.StatusExhausted))
	seen, err = Look(ctxFor(t), a)
	require.NoError(t, err)
	assert.True(t, seen.FamilyEnded)
	assert.Equal(t, map[string]bool{"gone": true}, seen.Locked)
	take, give := seen.Plan(map[string]bool{}, 0)
	assert.Empty(t, take, "an ended family places nothing")
	assert.Zero(t, give)
}
