package member

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
)

func TestShare(t *testing.T) {
	for _, c := range []struct{ beings, members, want int }{
		{0, 3, 0}, {1, 3, 1}, {3, 3, 1}, {4, 3, 2}, {300, 3, 100}, {301, 3, 101}, {5, 0, 5},
	} {
		assert.Equal(t, c.want, Share(c.beings, c.members), "%d beings over %d members", c.beings, c.members)
	}
}

func TestPlan(t *testing.T) {
	family := func(members int, locked ...string) placement.Placement {
		p := placement.Placement{Members: members, Registered: map[string]string{"a": RootBeing, "b": RootBeing, "c": "a"},
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
		p         placement.Placement
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
		{"an ended family takes nothing", placement.Placement{Members: 1, FamilyEnded: true}, set(), 0, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			take, give := Plan(c.p, c.mine, c.releasing)
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

func TestGiveBack(t *testing.T) {
	for _, c := range []struct {
		held []string
		want string
	}{
		{nil, ""},
		{[]string{RootBeing}, RootBeing},
		{[]string{RootBeing, "a", "c", "b"}, "c"},
		{[]string{"b", RootBeing}, "b"},
	} {
		assert.Equal(t, c.want, GiveBack(c.held), "%v", c.held)
	}
}

func TestStopOrder(t *testing.T) {
	// root ─┬─ a ── c
	//       └─ b
	tree := func() placement.Placement {
		p := placement.Empty()
		p.Registered = map[string]string{"a": RootBeing, "b": RootBeing, "c": "a"}
		return p
	}
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	all := []string{RootBeing, "a", "b", "c"}
	for _, c := range []struct {
		name       string
		p          func() placement.Placement
		mine       map[string]bool
		held       []string
		everywhere bool
		want       []string
	}{
		{"all here: the leaves first", tree, set(all...), all, true, []string{"b", "c"}},
		{"a parent goes once its children have", tree, set(RootBeing, "a"), []string{RootBeing, "a"}, true, []string{"a"}},
		{"a child held elsewhere holds its parent back when the family stops", func() placement.Placement {
			p := tree()
			p.Locked["c"] = true
			return p
		}, set(RootBeing, "a"), []string{RootBeing, "a"}, true, nil},
		{"leaving: a child on a member that stays does not hold its parent back", func() placement.Placement {
			p := tree()
			p.Locked["c"] = true
			return p
		}, set(RootBeing, "a"), []string{RootBeing, "a"}, false, []string{"a"}},
		{"leaving, not settled: a child on a member that stays holds its parent back", func() placement.Placement {
			p := tree()
			p.Locked["c"] = true
			return p
		}, set(RootBeing, "a"), []string{RootBeing, "a"}, true, nil},
		{"leaving: a child on another member that leaves does", func() placement.Placement {
			p := tree()
			p.Locked["c"], p.LeavingHeld["c"] = true, true
			return p
		}, set(RootBeing, "a"), []string{RootBeing, "a"}, false, nil},
		{"beings already stopping are not in held", tree, set(all...), []string{RootBeing}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, StopOrder(c.p(), c.mine, c.held, c.everywhere))
		})
	}
}

func TestSettled(t *testing.T) {
	left := time.Date(2026, 12, 8, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{999 * time.Millisecond, false},
		{time.Second, true},
		{time.Minute, true},
	} {
		assert.Equal(t, c.want, Settled(left, left.Add(c.after), 3*time.Second), "%s after the leave, lease 3 s", c.after)
	}
}

func TestSubtreeOf(t *testing.T) {
	p := placement.Empty()
	p.Registered = map[string]string{"a": RootBeing, "c": "a", "d": "a"}
	p.Stopping = map[string]bool{"a": true}
	p.Ended = map[string]string{"d": state.StatusStopped}
	for _, c := range []struct {
		name string
		b    HeldBeing
		want Subtree
	}{
		{"a child of a being stopping for good stops for good", HeldBeing{ID: "c"}, SubtreeStopForGood},
		{"unless it stops already", HeldBeing{ID: "c", Releasing: true}, SubtreeNothing},
		{"the root has no parent", HeldBeing{ID: RootBeing}, SubtreeNothing},
		{"a parent whose children have not all ended waits", HeldBeing{ID: "a", Releasing: true, AwaitingChildren: true}, SubtreeNothing},
		{"a being with no children goes on", HeldBeing{ID: "c", Releasing: true, ForGood: true, AwaitingChildren: true}, SubtreeChildrenEnded},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, SubtreeOf(p, c.b)) })
	}
	p.Ended["c"] = state.StatusStopped
	assert.Equal(t, SubtreeChildrenEnded, SubtreeOf(p, HeldBeing{ID: "a", Releasing: true, AwaitingChildren: true}), "once every child ended")
}

func TestEndOf(t *testing.T) {
	for _, c := range []struct {
		id, status      string
		failed, forGood bool
		want            End
	}{
		{RootBeing, state.StatusExhausted, false, false, EndFamily},
		{RootBeing, state.StatusFailed, false, false, EndLetGo},
		{RootBeing, state.StatusStopped, false, true, EndLetGo},
		{"c", state.StatusExhausted, false, false, EndRecorded},
		{"c", state.StatusFailed, false, false, EndRecorded},
		{"c", state.StatusFailed, true, false, EndLetGo},
		{"c", state.StatusStopped, false, true, EndRecorded},
		{"c", state.StatusStopped, true, true, EndLetGo},
		{"c", state.StatusStopped, false, false, EndLetGo},
	} {
		assert.Equal(t, c.want, EndOf(c.id, c.status, c.failed, c.forGood), "%+v", c)
	}
}
