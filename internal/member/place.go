package member

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/store/state"
)

// Placement is one look at a family whose beings are spread over its
// members (docs/cluster.md#placement): every member takes free beings up
// to its share and gives back what it holds beyond it.
type Placement struct {
	// Members is how many live members stay: those leaving
	// (MarkLeaving) are not counted.
	Members int
	// Registered maps every registered child to its parent's id (the
	// root's is RootBeing).
	Registered map[string]string
	// Ended are the beings recorded as ended, with their status.
	Ended map[string]string
	// Locked are the beings some other member holds or waits for. A
	// key of the looking member's own lease is not counted: one that an
	// attempt left behind is taken over by its next attempt.
	Locked map[string]bool
	// Stopping are the beings that stop for good, their children first.
	Stopping map[string]bool
	// FamilyEnded says the family itself ended.
	FamilyEnded bool
	// LeavingHeld are the beings held by a member that leaves, the
	// looking member's own included when it leaves.
	LeavingHeld map[string]bool
}

// MarkLeaving records that session's member leaves: its beings stop,
// children before parents across every member that leaves, and the
// members that stay take them. The mark goes with the member's lease.
func MarkLeaving(ctx context.Context, session *fence.Session) error {
	lease := fmt.Sprintf("%x", session.Lease())
	if _, err := session.Client().Put(ctx, session.Prefix()+"leaving/"+lease, "", clientv3.WithLease(clientv3.LeaseID(session.Lease()))); err != nil {
		return fmt.Errorf("cannot record that this member leaves: %w", err)
	}
	return nil
}

// Look reads the placement of session's family in one transaction.
func Look(ctx context.Context, session *fence.Session) (Placement, error) {
	prefix := session.Prefix()
	resp, err := session.Client().Txn(ctx).Then(
		clientv3.OpGet(prefix+"member/", clientv3.WithPrefix()),
		clientv3.OpGet(prefix+"being/", clientv3.WithPrefix()),
		clientv3.OpGet(prefix+"ended/", clientv3.WithPrefix()),
		clientv3.OpGet(prefix+"lock/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(prefix+"ended", clientv3.WithCountOnly()),
		clientv3.OpGet(prefix+"stop/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(prefix+"leaving/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return Placement{}, fmt.Errorf("cannot read the family's placement: %w", err)
	}
	r := resp.Responses
	leaving := map[string]bool{}
	for _, kv := range r[6].GetResponseRange().Kvs {
		leaving[strings.TrimPrefix(string(kv.Key), prefix+"leaving/")] = true
	}
	p := Placement{
		LeavingHeld: map[string]bool{},
		Registered:  map[string]string{},
		Ended:       map[string]string{},
		Locked:      map[string]bool{},
		Stopping:    map[string]bool{},
		FamilyEnded: r[4].GetResponseRange().Count > 0,
	}
	for _, kv := range r[0].GetResponseRange().Kvs {
		var info Info
		if err := json.Unmarshal(kv.Value, &info); err != nil {
			return Placement{}, fmt.Errorf("member record %s: %w", kv.Key, err)
		}
		if !leaving[info.Lease] {
			p.Members++
		}
	}
	for _, kv := range r[5].GetResponseRange().Kvs {
		p.Stopping[strings.TrimPrefix(string(kv.Key), prefix+"stop/")] = true
	}
	for _, kv := range r[1].GetResponseRange().Kvs {
		p.Registered[strings.TrimPrefix(string(kv.Key), prefix+"being/")] = string(kv.Value)
	}
	for _, kv := range r[2].GetResponseRange().Kvs {
		p.Ended[strings.TrimPrefix(string(kv.Key), prefix+"ended/")] = string(kv.Value)
	}
	own := fmt.Sprintf("%x", session.Lease())
	for _, kv := range r[3].GetResponseRange().Kvs {
		being, lease, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix+"lock/"), "/")
		if ok && lease != own {
			p.Locked[being] = true
		}
		if ok && leaving[lease] {
			p.LeavingHeld[being] = true
		}
	}
	return p, nil
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

// Share is the most beings one member takes: placeable beings over live
// members, rounded up (every being when no member is counted yet).
func Share(placeable, members int) int {
	if members <= 0 {
		return placeable
	}
	return (placeable + members - 1) / members
}

// Plan is what a member holding mine (giving back releasing of them
// already) does at this look: the free beings it takes, in order, and
// how many of its own it gives back. It never takes more than its share,
// and it gives back only what it holds beyond it.
func (p Placement) Plan(mine map[string]bool, releasing int) (take []string, give int) {
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
