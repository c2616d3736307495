package fence

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The keys of a family's members, read and written by internal/member
// through the verbs below (their values are member's JSON, opaque here):
//
//	family         which shared root the family lives on, written once by
//	               its first member
//	member/<name>  a live member's record, on the member's lease
func (k keys) familyRecord() string { return k.prefix + "family" }

// FamilyRecord reads the family's record; ok is false when there is none
// yet.
func (s *Session) FamilyRecord(ctx context.Context) (value []byte, ok bool, err error) {
	key := s.keys.familyRecord()
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the family record %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return resp.Kvs[0].Value, true, nil
}

// CreateFamilyRecord writes the family's record unless one exists;
// created is false when another member wrote one first.
func (s *Session) CreateFamilyRecord(ctx context.Context, value []byte) (created bool, err error) {
	key := s.keys.familyRecord()
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("cannot write the family record %s: %w", key, err)
	}
	return txn.Succeeded, nil
}

// MemberRecords reads every live member's record, by name, and the
// revision they were read at.
func (s *Session) MemberRecords(ctx context.Context) (map[string][]byte, int64, error) {
	prefix := s.keys.member("")
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("cannot list the family's members: %w", err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = kv.Value
	}
	return out, resp.Header.Revision, nil
}

// PutMember writes the record of member name on the session's lease,
// provided no member record was written since revision since (so two
// members judging each other at once cannot both get in) and name has
// no record. taken says a record of name exists; neither set means the
// members changed since: list them again.
func (s *Session) PutMember(ctx context.Context, name string, value []byte, since int64) (written, taken bool, err error) {
	key := s.keys.member(name)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.ModRevision(s.keys.member("")), "<", since+1).WithPrefix()).
		Then(clientv3.OpPut(key, string(value), clientv3.WithLease(s.session.Lease()))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return false, false, fmt.Errorf("cannot write the member record %s: %w", key, err)
	}
	if resp.Succeeded {
		return true, false, nil
	}
	taken = len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) > 0
	return false, taken, nil
}

// DeleteMember deletes the record of member name now.
func (s *Session) DeleteMember(ctx context.Context, name string) error {
	key := s.keys.member(name)
	if _, err := s.client.Delete(ctx, key); err != nil {
		return fmt.Errorf("cannot delete the member record %s: %w", key, err)
	}
	return nil
}

// WatchMembers wakes its receiver (coalesced) at every change of a
// member record, until ctx ends; it is closed then.
func (s *Session) WatchMembers(ctx context.Context) <-chan struct{} {
	ch := s.client.Watch(clientv3.WithRequireLeader(ctx), s.keys.member(""), clientv3.WithPrefix())
	wake := make(chan struct{}, 1)
	go func() {
		defer close(wake)
		for range ch {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake
}

// EndLease revokes another member's lease (its process is gone): its
// records and locks go at once.
func (s *Session) EndLease(ctx context.Context, lease int64) error {
	if _, err := s.client.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		return fmt.Errorf("cannot end lease %x: %w", lease, err)
	}
	return nil
}

// HolderLease is the lease, in hex, of the member that holds being's
// lock: the oldest key under lock/<being>/ (an etcd mutex is held by its
// oldest waiter). ok is false when nobody holds or waits for it.
func (s *Session) HolderLease(ctx context.Context, being string) (lease string, ok bool, err error) {
	prefix := s.keys.lockPrefix(being) + "/"
	locks, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return "", false, fmt.Errorf("cannot read the lock of %s: %w", being, err)
	}
	if len(locks.Kvs) == 0 {
		return "", false, nil
	}
	return strings.TrimPrefix(string(locks.Kvs[0].Key), prefix), true, nil
}
