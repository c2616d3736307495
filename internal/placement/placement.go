// Package placement is the port between a member's placer and the store
// that places a family's beings over its members
// (docs/cluster.md#placement): the view one look reads (Placement), the
// verbs a placer uses (Store and Lock), and Memory, a Store in memory
// for the placer's tests. internal/fence implements Store on etcd;
// placementtest is the contract both keep.
//
// The package is pure data and interfaces: it knows no key, no etcd and
// no actor.
package placement

import (
	"context"
	"errors"
	"maps"
	"slices"
)

// RootBeing is the id of a family's root being in the store; every
// other being is known by the name of its directory, children/<uuid>.
const RootBeing = "root"

// ErrNotHeld is what a verb under a lock answers when the lock is no
// longer held: another member has it, or the member's lease ended. A
// Store wraps it (internal/fence's ErrFenced is it).
var ErrNotHeld = errors.New("the lock is no longer held")

// Placement is one look at a family whose beings are spread over its
// members: every member takes free beings up to its share and gives
// back what it holds beyond it.
type Placement struct {
	// Members is how many live members stay: those leaving
	// (Store.MarkLeaving) are not counted.
	Members int
	// Registered maps every registered child to its parent's id (the
	// root's is RootBeing).
	Registered map[string]string
	// Ended are the beings recorded as ended, with their status.
	Ended map[string]string
	// Locked are the beings some other member holds or waits for. A
	// lock of the looking member's own is not counted.
	Locked map[string]bool
	// Stopping are the beings that stop for good, their children first.
	Stopping map[string]bool
	// FamilyEnded says the family itself ended: its root's end was
	// recorded.
	FamilyEnded bool
	// LeavingHeld are the beings held by a member that leaves, the
	// looking member's own included when it leaves.
	LeavingHeld map[string]bool
}

// Empty is a placement with every map made and nothing in it.
func Empty() Placement {
	return Placement{
		Registered:  map[string]string{},
		Ended:       map[string]string{},
		Locked:      map[string]bool{},
		Stopping:    map[string]bool{},
		LeavingHeld: map[string]bool{},
	}
}

// Placeable are the beings to be placed: the root and every registered
// child, less the ended, the root first, then by id.
func (p Placement) Placeable() []string {
	out := []string{}
	if p.Ended[RootBeing] == "" {
		out = append(out, RootBeing)
	}
	for _, id := range slices.Sorted(maps.Keys(p.Registered)) {
		if p.Ended[id] == "" {
			out = append(out, id)
		}
	}
	return out
}

// ChildrenEnded says whether every registered child of being id ended.
func (p Placement) ChildrenEnded(id string) bool {
	for child, parent := range p.Registered {
		if parent == id && p.Ended[child] == "" {
			return false
		}
	}
	return true
}

// Lock is a being's lock, held by one member's store.
type Lock interface {
	// Being is the id of the locked being.
	Being() string
	// Token is the fencing token: it grows with every taking of any
	// lock of the family.
	Token() uint64
	// Unlock lets the being go; its steps are refused from then on.
	Unlock(ctx context.Context) error
}

// Store is one member's view of its family's placement, and the verbs
// that change it. Every method is safe for concurrent use and bounded by
// ctx.
type Store interface {
	// Look reads the whole placement in one consistent read.
	Look(ctx context.Context) (Placement, error)
	// TryLockAll takes the lock of each of beings (at most MaxTryAll)
	// that no member holds or waits for, all in one round trip, and
	// returns those it took by being. A being this member holds or is
	// taking already is skipped. An error takes none.
	TryLockAll(ctx context.Context, beings []string) (map[string]Lock, error)
	// MarkLeaving records that this member leaves: it is no longer
	// counted in Members, and what it holds is in LeavingHeld. The mark
	// goes with the member.
	MarkLeaving(ctx context.Context) error
	// End records, under l, that l's being will not cycle again, with
	// its status; for the root, that the family ended. ErrNotHeld (or an
	// error wrapping it) when l is not held.
	End(ctx context.Context, l Lock, status string) error
	// StopChildren records, under l, that l's being stops for good: its
	// children stop for good before it, wherever they run.
	StopChildren(ctx context.Context, l Lock) error
	// Watch wakes its receiver (a value on the channel, coalesced) when
	// a lock is let go, a child is registered, a member joins or goes, a
	// member leaves, a being ends or stops for good, until ctx ends.
	Watch(ctx context.Context) <-chan struct{}
}

// MaxTryAll is the most locks Store.TryLockAll tries at once.
const MaxTryAll = 64
