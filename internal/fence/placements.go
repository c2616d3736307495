package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/placement"
)

// The keys a look reads beside lock/, being/, ended/ and stop/
// (place.go):
//
//	member/<name>    a live member's record, on its lease (internal/member
//	                 writes its value; a look reads its "lease")
//	leaving/<lease>  a member that leaves, on its lease
//	ended            the family's end, {"status": S}, put under the
//	                 root's lock
func (k keys) member(name string) string { return k.prefix + "member/" + name }

func (k keys) leaving(lease string) string { return k.prefix + "leaving/" + lease }

func (k keys) familyEnd() string { return k.prefix + "ended" }

// Placements is the placement store of a family spread over its members
// (placement.Store) on the member's session: etcd's keys behind the
// placer's verbs.
type Placements struct{ s *Session }

var _ placement.Store = Placements{}

// NewPlacements returns s's placement store.
func NewPlacements(s *Session) Placements { return Placements{s: s} }

// leaseHex is a lease as lock keys and member records spell it.
func leaseHex(lease int64) string { return fmt.Sprintf("%x", lease) }

// Look reads the placement in one transaction.
func (p Placements) Look(ctx context.Context) (placement.Placement, error) {
	s, k := p.s, p.s.keys
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(k.member(""), clientv3.WithPrefix()),
		clientv3.OpGet(k.registration(""), clientv3.WithPrefix()),
		clientv3.OpGet(k.end(""), clientv3.WithPrefix()),
		clientv3.OpGet(k.prefix+"lock/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.familyEnd(), clientv3.WithCountOnly()),
		clientv3.OpGet(k.stop(""), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.leaving(""), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return placement.Placement{}, fmt.Errorf("cannot read the family's placement: %w", err)
	}
	r := resp.Responses
	leaving := map[string]bool{}
	for _, kv := range r[6].GetResponseRange().Kvs {
		leaving[strings.TrimPrefix(string(kv.Key), k.leaving(""))] = true
	}
	pl := placement.Empty()
	pl.FamilyEnded = r[4].GetResponseRange().Count > 0
	for _, kv := range r[0].GetResponseRange().Kvs {
		var rec struct {
			Lease string `json:"lease"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return placement.Placement{}, fmt.Errorf("member record %s: %w", kv.Key, err)
		}
		if !leaving[rec.Lease] {
			pl.Members++
		}
	}
	for _, kv := range r[5].GetResponseRange().Kvs {
		pl.Stopping[strings.TrimPrefix(string(kv.Key), k.stop(""))] = true
	}
	for _, kv := range r[1].GetResponseRange().Kvs {
		pl.Registered[strings.TrimPrefix(string(kv.Key), k.registration(""))] = string(kv.Value)
	}
	for _, kv := range r[2].GetResponseRange().Kvs {
		pl.Ended[strings.TrimPrefix(string(kv.Key), k.end(""))] = string(kv.Value)
	}
	own := leaseHex(s.Lease())
	for _, kv := range r[3].GetResponseRange().Kvs {
		being, lease, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), k.prefix+"lock/"), "/")
		if ok && lease != own {
			// A key of this member's own lease is not counted: one that
			// an attempt left behind is taken over by its next attempt.
			pl.Locked[being] = true
		}
		if ok && leaving[lease] {
			pl.LeavingHeld[being] = true
		}
	}
	return pl, nil
}

// TryLockAll is Session.TryLockAll; each lock it returns is a *Lock.
func (p Placements) TryLockAll(ctx context.Context, beings []string) (map[string]placement.Lock, error) {
	got, err := p.s.TryLockAll(ctx, beings)
	if err != nil {
		return nil, notHeld(err)
	}
	out := make(map[string]placement.Lock, len(got))
	for being, l := range got {
		out[being] = l
	}
	return out, nil
}

// MarkLeaving puts leaving/<lease> on the member's lease.
func (p Placements) MarkLeaving(ctx context.Context) error {
	s := p.s
	lease := s.Lease()
	if _, err := s.client.Put(ctx, s.keys.leaving(leaseHex(lease)), "", clientv3.WithLease(clientv3.LeaseID(lease))); err != nil {
		return fmt.Errorf("cannot record that this member leaves: %w", err)
	}
	return nil
}

// End records l's being's end under l (Lock.End), or the family's for
// the root (Lock.EndFamily).
func (p Placements) End(ctx context.Context, l placement.Lock, status string) error {
	fl, err := p.own(l)
	if err != nil {
		return err
	}
	if fl.being == placement.RootBeing {
		return notHeld(fl.EndFamily(ctx, status))
	}
	return notHeld(fl.End(ctx, status))
}

// StopChildren is Lock.StopChildren.
func (p Placements) StopChildren(ctx context.Context, l placement.Lock) error {
	fl, err := p.own(l)
	if err != nil {
		return err
	}
	return notHeld(fl.StopChildren(ctx))
}

// own is l as a lock of p's session.
func (p Placements) own(l placement.Lock) (*Lock, error) {
	fl, ok := l.(*Lock)
	if !ok || fl.s != p.s {
		return nil, fmt.Errorf("being %s: a lock of another store: %w", l.Being(), placement.ErrNotHeld)
	}
	return fl, nil
}

// notHeld adds placement.ErrNotHeld to a fenced error.
func notHeld(err error) error {
	if err != nil && errors.Is(err, ErrFenced) && !errors.Is(err, placement.ErrNotHeld) {
		return fmt.Errorf("%w (%w)", err, placement.ErrNotHeld)
	}
	return err
}

// Watch wakes its receiver when a lock is let go, or a registration, a
// member, a member's leaving, a being's end, a stop or the family's end
// changes.
func (p Placements) Watch(ctx context.Context) <-chan struct{} {
	s, k := p.s, p.s.keys
	wctx := clientv3.WithRequireLeader(ctx)
	wake := make(chan struct{}, 1)
	for _, key := range []string{k.prefix + "lock/", k.registration(""), k.member(""), k.familyEnd(), k.stop(""), k.leaving("")} {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if key == k.prefix+"lock/" {
			// A lock let go frees a being; one taken frees none.
			opts = append(opts, clientv3.WithFilterPut())
		}
		ch := s.client.Watch(wctx, key, opts...)
		go func() {
			for range ch {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	return wake
}

// familyEndRecord is the value of the family's end.
type familyEndRecord struct {
	Status string `json:"status"`
}

// EndFamily records, under l (the root's lock, or the lock covering the
// whole family), that the family ended with the root's status: a holder
// that lost the lock cannot end the family.
func (l *Lock) EndFamily(ctx context.Context, status string) error {
	data, _ := json.Marshal(familyEndRecord{Status: status})
	resp, err := l.s.client.Txn(ctx).If(guard(l)).Then(clientv3.OpPut(l.s.keys.familyEnd(), string(data))).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("cannot record the family's end: %w: %w", ErrOutcomeUnknown, err)
	case !resp.Succeeded:
		return fmt.Errorf("cannot record the family's end: %w", ErrFenced)
	}
	return nil
}

// FamilyEnded says whether the family ended, and the root's last status.
func (s *Session) FamilyEnded(ctx context.Context) (string, bool, error) {
	resp, err := s.client.Get(ctx, s.keys.familyEnd())
	if err != nil {
		return "", false, fmt.Errorf("cannot read whether the family ended: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	var rec familyEndRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return "", false, fmt.Errorf("the family's end record %s is not {\"status\":S}: %q", resp.Kvs[0].Key, resp.Kvs[0].Value)
	}
	return rec.Status, true, nil
}
