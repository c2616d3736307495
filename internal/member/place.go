package member

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
)

// The placement policy of a family spread over its members
// (docs/cluster.md#placement): pure functions of one look
// (placement.Placement) and of what the member holds, which the placer
// actor (actors/placer) calls at every look and at every being's end.

// Share is the most beings one member takes: placeable beings over live
// members, rounded up (every being when no member is counted yet).
func Share(placeable, members int) int {
	if members <= 0 {
		return placeable
	}
	return (placeable + members - 1) / members
}

// Plan is what a member holding mine (giving back releasing of them
// already) does at a look p: the free beings it takes, in order, and how
// many of its own it gives back. It never takes more than its share, and
// it gives back only what it holds beyond it.
func Plan(p placement.Placement, mine map[string]bool, releasing int) (take []string, give int) {
	if p.FamilyEnded {
		return nil, 0
	}
	placeable := p.Placeable()
	share := Share(len(placeable), p.Members)
	keeps := len(mine) - releasing
	if keeps > share {
		return nil, keeps - share
	}
	for _, id := range placeable {
		if len(take) == share-keeps {
			break
		}
		if !p.Locked[id] && !mine[id] {
			take = append(take, id)
		}
	}
	return take, 0
}

// GiveBack picks which of held (the member's beings not being released
// yet) to give back first: the greatest id, the root last. "" when held
// is empty.
func GiveBack(held []string) string {
	pick := ""
	for _, id := range held {
		switch {
		case pick == "", pick == RootBeing:
			pick = id
		case id == RootBeing:
		case id > pick:
			pick = id
		}
	}
	return pick
}

// StopOrder is which of held (the member's beings not being released
// yet) stop now when the family stops for good or the member leaves:
// each being none of whose children still runs. A child runs while this
// member holds it (mine), while a member that leaves holds it, or, when
// everywhere is set, while any member holds it. everywhere is set once
// the family stops for good, and while a member that leaves has not
// settled its leave (Settled). A member that leaves while the family
// lives waits, once settled, only for children on members that leave:
// those on members that stay go on. The leaves stop first, then their
// parents, across members.
func StopOrder(p placement.Placement, mine map[string]bool, held []string, everywhere bool) []string {
	running := map[string]bool{}
	for child, parent := range p.Registered {
		if mine[child] || p.LeavingHeld[child] || (everywhere && p.Locked[child]) {
			running[parent] = true
		}
	}
	var out []string
	for _, id := range held {
		if !running[id] {
			out = append(out, id)
		}
	}
	return out
}

// Settled reports whether a member that began to leave at left has,
// at now, waited out the settle of its leave: a third of the lease, the
// interval of its looks. Members stopped together (every member of a
// family signalled at once) mark their leave a few milliseconds apart,
// each after the others may have looked; until settled, a member that
// leaves counts a child held by any member as running (StopOrder), so
// that each finds the others' marks before a parent stops ahead of a
// child on another member. A child on a member that stays holds its
// parent back for the settle only.
func Settled(left, now time.Time, lease time.Duration) bool {
	return !now.Before(left.Add(lease / 3))
}

// Subtree is what a look means for a being of this member in a family
// where beings stop for good with their parents.
type Subtree int

const (
	// SubtreeNothing: nothing to do for the being.
	SubtreeNothing Subtree = iota
	// SubtreeChildrenEnded: the being waits for its children to end, and
	// every one has: it goes on stopping.
	SubtreeChildrenEnded
	// SubtreeStopForGood: the being's parent stops for good, so the
	// being stops for good too, its own children first.
	SubtreeStopForGood
)

// HeldBeing is what the policy knows of one being a member holds.
type HeldBeing struct {
	ID string
	// Releasing: the being was asked to stop already.
	Releasing bool
	// ForGood: the being was asked to stop for good.
	ForGood bool
	// AwaitingChildren: the being stops for good and waits for its
	// children to end.
	AwaitingChildren bool
}

// SubtreeOf is what look p means for b.
func SubtreeOf(p placement.Placement, b HeldBeing) Subtree {
	if b.AwaitingChildren && p.ChildrenEnded(b.ID) {
		return SubtreeChildrenEnded
	}
	if b.Releasing || b.ForGood {
		return SubtreeNothing
	}
	if parent, ok := p.Registered[b.ID]; ok && p.Stopping[parent] {
		return SubtreeStopForGood
	}
	return SubtreeNothing
}

// End is what a being's end on this member means.
type End int

const (
	// EndLetGo: the being is let go, and any member may take it again
	// (it was handed over, or it failed here and its failure is not
	// durable).
	EndLetGo End = iota
	// EndRecorded: the being will not cycle again: its end is recorded
	// so that no member takes it again.
	EndRecorded
	// EndFamily: the root is exhausted: the family ends, every being
	// stops for good, children before parents.
	EndFamily
)

// EndOf is what the end of being id with status means. failed says the
// end came with an error of this member's (a failure whose cause is not
// durable: another member tries the being); forGood says the being was
// asked to stop for good with its parent. A being that ended by itself
// (exhausted, or a failure it journaled), or stopped for good without an
// error, is recorded. Only the root's exhaustion ends the family: a root
// that failed is tried by another member, as a family held as one unit
// is.
func EndOf(id, status string, failed, forGood bool) End {
	if id == RootBeing {
		if status == state.StatusExhausted {
			return EndFamily
		}
		return EndLetGo
	}
	if status == state.StatusExhausted || (status == state.StatusFailed && !failed) || (forGood && !failed) {
		return EndRecorded
	}
	return EndLetGo
}

// Dir is the directory of being id in the family whose root lives in
// root: children/<id> under its parent's, up the registrations to the
// root. A being whose registrations do not lead to the root is an error.
func Dir(root string, registered map[string]string, id string) (string, error) {
	var path []string
	for at := id; at != RootBeing; at = registered[at] {
		if len(path) > len(registered) {
			return "", fmt.Errorf("the registrations of being %s go round in a circle", id)
		}
		if _, ok := registered[at]; !ok {
			return "", fmt.Errorf("being %s is not registered", at)
		}
		path = append(path, at)
	}
	dir := filepath.Clean(root)
	for i := len(path) - 1; i >= 0; i-- {
		dir = filepath.Join(dir, state.ChildRecordDir(path[i]))
	}
	return dir, nil
}
