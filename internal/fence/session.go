package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/wisent/singularity/supervision/fault"
)

// Defaults of Config's zero fields.
const (
	DefaultTTL         = 3 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// Config is what a member's session needs.
type Config struct {
	// Endpoints are etcd's client URLs; at least one.
	Endpoints []string
	// Family names the family; its keys live under /singularity/<Family>/.
	// An immutable identifier (identity.Valid).
	Family string
	// TTL is the lease's time to live, whole seconds (etcd's unit); zero
	// means DefaultTTL. A member frozen or cut off from etcd for longer
	// loses every lock.
	TTL time.Duration
	// DialTimeout bounds reaching etcd at Open; zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// CommitTimeout bounds one commit transaction, after which its
	// outcome is unknown; zero means three times the TTL. It does not
	// bound how long an unreachable etcd goes unnoticed: the session
	// ends when its lease does, and the member stops its beings then.
	// It only tells a slow answer from a lost etcd: while a new holder
	// recovered 300 beings, a commit's answer came later than one TTL
	// in the failover test.
	CommitTimeout time.Duration
}

func (c *Config) defaults() error {
	if len(c.Endpoints) == 0 {
		return fault.New(fault.ClassConfiguration, "the cluster needs at least one etcd endpoint")
	}
	if err := validName("the family name", c.Family); err != nil {
		return fault.Errorf(fault.ClassConfiguration, "%w", err)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		return fault.Errorf(fault.ClassConfiguration, "the lease's time to live %s is not a whole number of seconds, at least 1", c.TTL)
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = commitTimeouts * c.TTL
	}
	return nil
}

// commitTimeouts is the default commit timeout in TTLs.
const commitTimeouts = 3

// Session is a member's one connection to etcd: a client and a lease
// kept alive, under which the member holds its beings' locks. Its
// methods are safe for concurrent use.
type Session struct {
	cfg     Config
	keys    keys
	client  *clientv3.Client
	session *concurrency.Session

	mu     sync.Mutex
	held   map[string]bool // beings locked or being locked
	closed bool
}

// Open connects to etcd and takes the member's lease. An etcd that
// does not answer within the dial timeout is an error (nothing is left
// behind).
func Open(cfg Config) (*Session, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// Dead connections (a frozen etcd) are noticed within a second
		// or two, not minutes.
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot reach etcd at %v: %w", cfg.Endpoints, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	lease, err := client.Grant(ctx, int64(cfg.TTL/time.Second))
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("cannot reach etcd at %v within %s: %w", cfg.Endpoints, cfg.DialTimeout, err)
	}
	session, err := concurrency.NewSession(client, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(cfg.TTL/time.Second)))
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("cannot keep the member's etcd lease alive: %w", err)
	}
	return &Session{cfg: cfg, keys: newKeys(cfg.Family), client: client, session: session, held: map[string]bool{}}, nil
}

// Done is closed when the session's lease is lost: every lock is gone,
// and the member must fence itself (write nothing more). Close closes
// it too.
func (s *Session) Done() <-chan struct{} { return s.session.Done() }

// Lease is the session's etcd lease (its id in lock keys, in hex).
func (s *Session) Lease() int64 { return int64(s.session.Lease()) }

// Close ends the session: its lease is revoked, so every lock it holds
// is let go at once, and the client is closed. A Batcher of the session
// is closed first by its owner.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.session.Close()
	if cerr := s.client.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock takes being's lock, waiting while another member holds it, until
// ctx ends (then nothing of the attempt is left in etcd).
func (s *Session) Lock(ctx context.Context, being string) (*Lock, error) {
	return s.lock(ctx, being, false)
}

// TryLock takes being's lock if no other member holds it, and is
// ErrLocked otherwise.
func (s *Session) TryLock(ctx context.Context, being string) (*Lock, error) {
	return s.lock(ctx, being, true)
}

func (s *Session) lock(ctx context.Context, being string, try bool) (l *Lock, err error) {
	if err := validName("the being id", being); err != nil {
		return nil, err
	}
	// One session has one key per being (the mutex's key is the lease):
	// a second Lock would share it and think itself the holder.
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case s.held[being]:
		s.mu.Unlock()
		return nil, fmt.Errorf("lock of being %s: %w", being, ErrHeld)
	}
	s.held[being] = true
	s.mu.Unlock()
	defer func() {
		if err != nil {
			s.release(being)
		}
	}()

	m := concurrency.NewMutex(s.session, s.keys.lockPrefix(being))
	if try {
		err = m.TryLock(ctx)
	} else {
		err = m.Lock(ctx)
	}
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		return nil, fmt.Errorf("lock of being %s: %w", being, ErrLocked)
	case errors.Is(err, concurrency.ErrSessionExpired):
		return nil, fmt.Errorf("lock of being %s: the member's session ended: %w", being, ErrFenced)
	case err != nil:
		s.withdraw(being)
		return nil, fmt.Errorf("lock of being %s: %w", being, err)
	}
	// The token is the key's create revision, read back: the mutex keeps
	// it to itself.
	resp, err := s.client.Get(ctx, m.Key())
	if err == nil && len(resp.Kvs) == 0 {
		err = fmt.Errorf("the member's session ended: %w", ErrFenced)
	}
	if err != nil {
		undo, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
		defer cancel()
		_ = m.Unlock(undo)
		return nil, fmt.Errorf("lock of being %s: %w", being, err)
	}
	return &Lock{s: s, being: being, key: m.Key(), token: uint64(resp.Kvs[0].CreateRevision), own: true}, nil
}

// withdraw deletes this session's key under being's lock after an
// attempt that failed midway (its context ended, etcd failed it): the
// key may have been written, and a key nobody knows of would in time
// hold the lock for this member, or keep every other member out of it.
// A delete that fails too leaves the key to the lease.
func (s *Session) withdraw(being string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	_, _ = s.client.Delete(ctx, s.lockKey(being))
}

func (s *Session) release(being string) {
	s.mu.Lock()
	delete(s.held, being)
	s.mu.Unlock()
}

// Committed reads being's commit record: the token and seq of the last
// step accepted, both zero when none ever was.
func (s *Session) Committed(ctx context.Context, being string) (token, seq uint64, err error) {
	if err := validName("the being id", being); err != nil {
		return 0, 0, err
	}
	resp, err := s.client.Get(ctx, s.keys.commit(being))
	if err != nil {
		return 0, 0, fmt.Errorf("commit record of being %s: %w", being, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, 0, nil
	}
	r, err := decodeRecord(resp.Kvs[0].Value)
	if err != nil {
		return 0, 0, fmt.Errorf("commit record of being %s: %w", being, err)
	}
	return r.Token, r.Seq, nil
}

// TryLockAll tries the locks of beings in one etcd transaction (at most
// MaxTryAll of them): it takes each one no member holds or waits for,
// and returns those it took, by being. A being this member already holds
// or is taking is skipped. A transaction whose outcome is unknown (ctx
// ended, etcd failed it) takes none: every key it may have written is
// deleted again, or left to the lease if that fails too.
//
// A member taking over a dead member's beings took each lock in a round
// trip or two of its own; under the load of the survivors' commits these
// added up to seconds (docs/cluster.md#measured).
func (s *Session) TryLockAll(ctx context.Context, beings []string) (map[string]*Lock, error) {
	if len(beings) > MaxTryAll {
		return nil, fmt.Errorf("%d locks tried at once: at most %d are", len(beings), MaxTryAll)
	}
	for _, being := range beings {
		if err := validName("the being id", being); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	var trying []string
	for _, being := range beings {
		if !s.held[being] {
			s.held[being] = true
			trying = append(trying, being)
		}
	}
	s.mu.Unlock()
	if len(trying) == 0 {
		return map[string]*Lock{}, nil
	}
	tries := make([]clientv3.Op, len(trying))
	for i, being := range trying {
		// Free: no key under the being's lock prefix, neither a holder's
		// nor a waiter's.
		free := clientv3.Compare(clientv3.CreateRevision(s.keys.lockPrefix(being)+"/"), "=", 0).WithPrefix()
		put := clientv3.OpPut(s.lockKey(being), "", clientv3.WithLease(s.session.Lease()))
		tries[i] = clientv3.OpTxn([]clientv3.Cmp{free}, []clientv3.Op{put}, nil)
	}
	resp, err := s.client.Txn(ctx).Then(tries...).Commit()
	if err != nil {
		s.withdrawAll(trying)
		for _, being := range trying {
			s.release(being)
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			err = fmt.Errorf("the member's session ended: %w", ErrFenced)
		}
		return nil, fmt.Errorf("locks of %d beings: %w", len(trying), err)
	}
	// Every key put by the transaction was created at its revision.
	token := uint64(resp.Header.Revision)
	got := make(map[string]*Lock, len(trying))
	for i, being := range trying {
		if !resp.Responses[i].GetResponseTxn().GetSucceeded() {
			s.release(being)
			continue
		}
		got[being] = &Lock{s: s, being: being, key: s.lockKey(being), token: token, own: true}
	}
	return got, nil
}

// MaxTryAll is the most locks TryLockAll tries in one transaction: etcd
// refuses a transaction of more than 128 operations by default
// (--max-txn-ops).
const MaxTryAll = 64

// lockKey is this session's key under being's lock prefix, as
// concurrency.Mutex names it.
func (s *Session) lockKey(being string) string {
	return fmt.Sprintf("%s/%x", s.keys.lockPrefix(being), s.Lease())
}

// withdrawAll deletes this session's keys under the locks of beings,
// in one transaction, as withdraw does one.
func (s *Session) withdrawAll(beings []string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	deletes := make([]clientv3.Op, len(beings))
	for i, being := range beings {
		deletes[i] = clientv3.OpDelete(s.lockKey(being))
	}
	_, _ = s.client.Txn(ctx).Then(deletes...).Commit()
}

// Lock is a being's lock held by the member's session.
type Lock struct {
	s     *Session
	being string
	key   string
	token uint64
	// own is false for a cover, which has no key of its own.
	own bool
}

// Being is the id of the locked being.
func (l *Lock) Being() string { return l.being }

// Token is the fencing token: the create revision of the lock key.
func (l *Lock) Token() uint64 { return l.token }

// Key is the lock key in etcd.
func (l *Lock) Key() string { return l.key }

// Unlock lets the being go: its lock key is deleted, and a Committer of
// this lock is fenced from then on.
func (l *Lock) Unlock(ctx context.Context) error {
	if !l.own {
		return fmt.Errorf("unlock of being %s: a cover has no lock of its own", l.being)
	}
	if _, err := l.s.client.Delete(ctx, l.key); err != nil {
		return fmt.Errorf("unlock of being %s: %w", l.being, err)
	}
	l.s.release(l.being)
	return nil
}

// Cover is a lock for another being fenced by l: its commits compare l's
// key and token and write that being's own commit record. A member that
// holds a family as one unit covers every being of it by the root's lock
// (docs/cluster.md#placement). Unlock is l's alone: a cover has nothing
// to let go, and Unlock on it is an error.
func (l *Lock) Cover(being string) (*Lock, error) {
	if err := validName("the being id", being); err != nil {
		return nil, err
	}
	return &Lock{s: l.s, being: being, key: l.key, token: l.token}, nil
}
