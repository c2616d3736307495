package fence

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

// TestMain skips the package's example where no etcd is installed, as
// etcdtest.Start skips a test: an example cannot skip itself, and it runs
// against a real etcd (etcdtest.Launch).
func TestMain(m *testing.M) {
	flag.Parse()
	if etcdtest.Binary() == "" {
		skip := flag.Lookup("test.skip")
		pattern := "^Example$"
		if old := skip.Value.String(); old != "" {
			pattern = old + "|" + pattern
		}
		if err := skip.Value.Set(pattern); err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "fence: Example skipped:", etcdtest.ErrNotInstalled)
	}
	testkit.VerifyMain(m)
}

// member opens a session of family on srv with a lease of 2 s, closed
// when the test ends.
func member(t testing.TB, srv *etcdtest.Server, family string) *Session {
	t.Helper()
	return open(t, srv, Config{Endpoints: srv.Endpoints(), Family: family, TTL: 2 * time.Second})
}

// open opens a session of cfg, closed when the test ends.
func open(t testing.TB, srv *etcdtest.Server, cfg Config) *Session {
	t.Helper()
	s, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lock takes being's lock on s within 10 s.
func lock(t testing.TB, s *Session, being string) *Lock {
	t.Helper()
	l, err := s.Lock(ctxFor(t, 10*time.Second), being)
	require.NoError(t, err)
	return l
}

// record reads being's commit record on s.
func record(t testing.TB, s *Session, being string) Record {
	t.Helper()
	token, seq, err := s.Committed(ctxFor(t, 10*time.Second), being)
	require.NoError(t, err)
	return Record{token, seq}
}

// TestOpenRefusesBadConfigurationAndAnAbsentEtcd: a configuration that
// cannot work is refused before anything is dialled, and an etcd that
// does not answer is an error within the dial timeout.
func TestOpenRefusesBadConfigurationAndAnAbsentEtcd(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no endpoint", Config{Family: "f"}, "configuration: the cluster needs at least one etcd endpoint"},
		{"a family with a slash", Config{Endpoints: []string{"http://127.0.0.1:1"}, Family: "a/b"},
			`configuration: the family name "a/b" is not 1 to 128 ASCII letters, digits or any of "-_.:"`},
		{"a time to live of a fraction of a second", Config{Endpoints: []string{"http://127.0.0.1:1"}, Family: "f", TTL: 1500 * time.Millisecond},
			"configuration: the lease's time to live 1.5s is not a whole number of seconds, at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.cfg)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}

	t.Run("etcd does not answer", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		began := time.Now()
		_, err = Open(Config{Endpoints: []string{"http://" + addr}, Family: "f", DialTimeout: time.Second})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot reach etcd at [http://"+addr+"] within 1s")
		assert.Less(t, time.Since(began), 5*time.Second)
	})
}

// TestLockTokenIsTheKeysCreateRevision: a lock's token is the create
// revision of its key, grows with every new holder, and one member
// holds a being once; another member cannot take it while it is held.
func TestLockTokenIsTheKeysCreateRevision(t *testing.T) {
	srv := etcdtest.Start(t)
	raw := srv.Client(t)
	a, b := member(t, srv, "fam"), member(t, srv, "fam")

	first := lock(t, a, "ada")
	got, err := raw.Get(ctxFor(t, 5*time.Second), first.Key())
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, uint64(got.Kvs[0].CreateRevision), first.Token())
	assert.Equal(t, fmt.Sprintf("/singularity/fam/lock/ada/%x", a.Lease()), first.Key())

	_, err = a.Lock(ctxFor(t, 5*time.Second), "ada")
	assert.ErrorIs(t, err, ErrHeld, "one member holds a being once")
	_, err = b.TryLock(ctxFor(t, 5*time.Second), "ada")
	assert.ErrorIs(t, err, ErrLocked)
	_, err = b.Lock(ctxFor(t, 300*time.Millisecond), "ada")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a member waits while another holds the being")
	_, err = a.Lock(ctxFor(t, time.Second), "no/slash")
	assert.Error(t, err)

	bo := lock(t, a, "bo")
	assert.Greater(t, bo.Token(), first.Token())
	require.NoError(t, first.Unlock(ctxFor(t, 5*time.Second)))
	again := lock(t, b, "ada")
	assert.Greater(t, again.Token(), bo.Token(), "a new holder's token is larger than any before")
}

// TestTryLockAllTakesTheFreeLocksInOneTransaction: the free locks of a
// batch are taken at one revision, their token; a being another member
// holds is left; one this member holds is skipped; and a lock so taken
// excludes other members and is let go as any other.
func TestTryLockAllTakesTheFreeLocksInOneTransaction(t *testing.T) {
	srv := etcdtest.Start(t)
	raw := srv.Client(t)
	a, b := member(t, srv, "fam"), member(t, srv, "fam")

	held := lock(t, a, "ada")
	mine := lock(t, b, "cy")
	got, err := b.TryLockAll(ctxFor(t, 5*time.Second), []string{"ada", "bo", "cy", "dee"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"bo", "dee"}, slices.Collect(maps.Keys(got)))
	assert.Equal(t, got["bo"].Token(), got["dee"].Token(), "one transaction, one revision")
	assert.Greater(t, got["bo"].Token(), mine.Token())
	for being, l := range got {
		kv, err := raw.Get(ctxFor(t, 5*time.Second), l.Key())
		require.NoError(t, err)
		require.Len(t, kv.Kvs, 1)
		assert.Equal(t, uint64(kv.Kvs[0].CreateRevision), l.Token())
		assert.Equal(t, b.Lease(), kv.Kvs[0].Lease, "the key goes with the member's lease")
		assert.Equal(t, fmt.Sprintf("/singularity/fam/lock/%s/%x", being, b.Lease()), l.Key())
	}
	_, err = a.TryLock(ctxFor(t, 5*time.Second), "bo")
	assert.ErrorIs(t, err, ErrLocked, "a lock taken in a batch excludes other members")
	_, err = b.TryLock(ctxFor(t, 5*time.Second), "dee")
	assert.ErrorIs(t, err, ErrHeld)

	require.NoError(t, held.Unlock(ctxFor(t, 5*time.Second)))
	again, err := b.TryLockAll(ctxFor(t, 5*time.Second), []string{"ada"})
	require.NoError(t, err)
	require.Contains(t, again, "ada", "a lock let go by all is free")

	require.NoError(t, got["bo"].Unlock(ctxFor(t, 5*time.Second)))
	taken, err := a.TryLockAll(ctxFor(t, 5*time.Second), []string{"bo"})
	require.NoError(t, err)
	require.Contains(t, taken, "bo")
	assert.Greater(t, taken["bo"].Token(), again["ada"].Token(), "a new holder's token is larger than any before")

	_, err = a.TryLockAll(ctxFor(t, 5*time.Second), make([]string, MaxTryAll+1))
	assert.EqualError(t, err, "65 locks tried at once: at most 64 are")
	_, err = a.TryLockAll(ctxFor(t, 5*time.Second), []string{"no/slash"})
	assert.Error(t, err)
	require.NoError(t, a.Close())
	_, err = a.TryLockAll(ctxFor(t, 5*time.Second), []string{"eve"})
	assert.ErrorIs(t, err, ErrClosed)
}

// TestCommitIsAcceptedUnderTheToken: a held being's commits write its
// commit record {token, seq}.
func TestCommitIsAcceptedUnderTheToken(t *testing.T) {
	srv := etcdtest.Start(t)
	s := member(t, srv, "fam")
	assert.Equal(t, Record{}, record(t, s, "ada"), "nothing committed yet")
	l := lock(t, s, "ada")
	c := NewCommitter(l, nil)
	require.NoError(t, c.Fence(3))
	assert.Equal(t, Record{l.Token(), 3}, record(t, s, "ada"))
	require.NoError(t, c.Fence(5))
	assert.Equal(t, Record{l.Token(), 5}, record(t, s, "ada"))
	assert.NoError(t, c.Err())
}

// TestCommitAfterTheLockWasLostIsFenced: however the lock is lost, the
// next commit is ErrFenced, leaves the commit record as it was, and so
// does every one after it, even once a new holder commits.
func TestCommitAfterTheLockWasLostIsFenced(t *testing.T) {
	srv := etcdtest.Start(t)
	raw := srv.Client(t)
	cases := []struct {
		name string
		lose func(t *testing.T, s *Session, l *Lock)
	}{
		{"the member let it go", func(t *testing.T, _ *Session, l *Lock) { require.NoError(t, l.Unlock(ctxFor(t, 5*time.Second))) }},
		{"its key was deleted", func(t *testing.T, _ *Session, l *Lock) {
			_, err := raw.Delete(ctxFor(t, 5*time.Second), l.Key())
			require.NoError(t, err)
		}},
		{"its lease was revoked", func(t *testing.T, s *Session, _ *Lock) {
			_, err := raw.Revoke(ctxFor(t, 5*time.Second), clientv3.LeaseID(s.Lease()))
			require.NoError(t, err)
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			being := fmt.Sprintf("being-%d", i)
			s, other := member(t, srv, "fam"), member(t, srv, "fam")
			l := lock(t, s, being)
			commit := NewCommitter(l, nil)
			require.NoError(t, commit.Fence(1))
			c.lose(t, s, l)

			err := commit.Fence(2)
			require.ErrorIs(t, err, ErrFenced)
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
			assert.Equal(t, Record{l.Token(), 1}, record(t, other, being), "a fenced commit changes nothing")

			next := lock(t, other, being)
			require.NoError(t, NewCommitter(next, nil).Fence(2))
			assert.ErrorIs(t, commit.Fence(3), ErrFenced, "fenced is final")
			assert.Equal(t, Record{next.Token(), 2}, record(t, other, being))
		})
	}
}

// TestASecondMemberCommitsOnlyOnceItHoldsTheBeing: while one member
// holds a being, another that waits for its lock has nothing to commit
// with and does not disturb the holder's commits; once it holds the
// being, the first member's commits are fenced.
func TestASecondMemberCommitsOnlyOnceItHoldsTheBeing(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := member(t, srv, "fam"), member(t, srv, "fam")
	la := lock(t, a, "ada")
	ca := NewCommitter(la, nil)

	got := make(chan *Lock, 1)
	go func() {
		l, err := b.Lock(context.Background(), "ada")
		assert.NoError(t, err)
		got <- l
	}()
	require.NoError(t, ca.Fence(1), "a waiting member does not fence the holder")
	require.NoError(t, ca.Fence(2))
	select {
	case <-got:
		t.Fatal("the second member took a held being")
	default:
	}

	require.NoError(t, la.Unlock(ctxFor(t, 5*time.Second)))
	var lb *Lock
	select {
	case lb = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second member did not get the being once it was let go")
	}
	cb := NewCommitter(lb, nil)
	require.NoError(t, cb.Fence(3))
	assert.ErrorIs(t, ca.Fence(3), ErrFenced)
	assert.Equal(t, Record{lb.Token(), 3}, record(t, a, "ada"))
}

// TestBatchWithOneFencedBeing: a batch of many beings' commits is one
// transaction when all hold (their records share one revision); when
// one of them is fenced, that one is ErrFenced and every other is
// committed by a transaction of its own.
func TestBatchWithOneFencedBeing(t *testing.T) {
	srv := etcdtest.Start(t)
	raw := srv.Client(t)
	s := member(t, srv, "fam")
	b := NewBatcher(s)
	defer b.Close()
	const n = 20
	locks := make([]*Lock, n)
	for i := range locks {
		locks[i] = lock(t, s, fmt.Sprintf("being-%d", i))
	}
	batch := func(seq uint64) []error {
		requests := make([]*request, n)
		for i, l := range locks {
			requests[i] = &request{lock: l, seq: seq, reply: make(chan error, 1)}
		}
		b.run(requests)
		errs := make([]error, n)
		for i, r := range requests {
			errs[i] = <-r.reply
		}
		return errs
	}

	for _, err := range batch(1) {
		require.NoError(t, err)
	}
	txns, commits := b.Stats()
	assert.Equal(t, [2]int64{1, n}, [2]int64{txns, commits}, "one transaction for the batch")
	revisions := map[int64]bool{}
	for i := range locks {
		got, err := raw.Get(ctxFor(t, 5*time.Second), s.keys.commit(locks[i].Being()))
		require.NoError(t, err)
		revisions[got.Kvs[0].ModRevision] = true
	}
	assert.Len(t, revisions, 1, "the batch's records were written by one transaction")

	_, err := raw.Delete(ctxFor(t, 5*time.Second), locks[7].Key())
	require.NoError(t, err)
	errs := batch(2)
	for i, err := range errs {
		if i == 7 {
			assert.ErrorIs(t, err, ErrFenced)
			assert.Equal(t, Record{locks[i].Token(), 1}, record(t, s, locks[i].Being()))
			continue
		}
		assert.NoError(t, err, "being %d", i)
		assert.Equal(t, Record{locks[i].Token(), 2}, record(t, s, locks[i].Being()))
	}
	txns, _ = b.Stats()
	assert.Equal(t, int64(1+1+n), txns, "the failed batch, then one transaction a being")
}

// TestBatcherCommitsManyBeingsAtOnce: beings committing at the same
// time through one batcher, one of them fenced, each get their own
// outcome; a closed batcher sends nothing.
func TestBatcherCommitsManyBeingsAtOnce(t *testing.T) {
	srv := etcdtest.Start(t)
	raw := srv.Client(t)
	s := member(t, srv, "fam")
	b := NewBatcher(s)
	const n, steps = 50, 5
	committers := make([]*Committer, n)
	locks := make([]*Lock, n)
	for i := range committers {
		locks[i] = lock(t, s, fmt.Sprintf("being-%d", i))
		committers[i] = NewCommitter(locks[i], b)
	}
	_, err := raw.Delete(ctxFor(t, 5*time.Second), locks[3].Key())
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(1); seq <= steps; seq++ {
				if errs[i] = c.Fence(seq); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i == 3 {
			assert.ErrorIs(t, err, ErrFenced)
			assert.Equal(t, Record{}, record(t, s, locks[i].Being()))
			continue
		}
		require.NoError(t, err, "being %d", i)
		assert.Equal(t, Record{locks[i].Token(), steps}, record(t, s, locks[i].Being()))
	}
	_, commits := b.Stats()
	assert.Equal(t, int64(n*steps-steps+1), commits, "every commit went through the batcher, the fenced being's once")

	b.Close()
	assert.ErrorIs(t, NewCommitter(locks[0], b).Fence(steps+1), ErrClosed)
}

// TestEtcdGoneMidCommitIsOutcomeUnknown: a commit sent to an etcd that
// is frozen or stopped is ErrOutcomeUnknown within the commit timeout,
// never ErrFenced, and stays so once etcd is back.
func TestEtcdGoneMidCommitIsOutcomeUnknown(t *testing.T) {
	cases := []struct {
		name      string
		gone      func(*etcdtest.Server)
		back      func(*etcdtest.Server)
		batchSize int
	}{
		{"frozen", (*etcdtest.Server).Pause, (*etcdtest.Server).Resume, 1},
		{"frozen, batched", (*etcdtest.Server).Pause, (*etcdtest.Server).Resume, 3},
		{"stopped", (*etcdtest.Server).Stop, (*etcdtest.Server).Restart, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			s := open(t, srv, Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: 5 * time.Second, CommitTimeout: time.Second})
			var b *Batcher
			if c.batchSize > 1 {
				b = NewBatcher(s)
				defer b.Close()
			}
			committers := make([]*Committer, c.batchSize)
			for i := range committers {
				committers[i] = NewCommitter(lock(t, s, fmt.Sprintf("being-%d", i)), b)
				require.NoError(t, committers[i].Fence(1))
			}

			c.gone(srv)
			errs := make([]error, len(committers))
			var wg sync.WaitGroup
			began := time.Now()
			for i, cm := range committers {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = cm.Fence(2) }()
			}
			wg.Wait()
			took := time.Since(began)
			c.back(srv)
			for _, err := range errs {
				require.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.NotErrorIs(t, err, ErrFenced)
			}
			assert.Less(t, took, 5*time.Second, "bounded by the commit timeout")
			assert.ErrorIs(t, committers[0].Fence(3), ErrOutcomeUnknown, "the outcome stays unknown: the being stops")
		})
	}
}

// TestSessionLossClosesDone: the lease revoked, or etcd frozen past the
// time to live, closes Done; the member's commits are fenced from then
// on without asking etcd.
func TestSessionLossClosesDone(t *testing.T) {
	cases := []struct {
		name string
		lose func(t *testing.T, srv *etcdtest.Server, s *Session)
		back func(*etcdtest.Server)
	}{
		{"the lease revoked", func(t *testing.T, srv *etcdtest.Server, s *Session) {
			_, err := srv.Client(t).Revoke(ctxFor(t, 5*time.Second), clientv3.LeaseID(s.Lease()))
			require.NoError(t, err)
		}, func(*etcdtest.Server) {}},
		{"etcd frozen past the lease", func(t *testing.T, srv *etcdtest.Server, _ *Session) { srv.Pause() },
			(*etcdtest.Server).Resume},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			s := open(t, srv, Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: time.Second})
			l := lock(t, s, "ada")
			commit := NewCommitter(l, nil)
			require.NoError(t, commit.Fence(1))
			select {
			case <-s.Done():
				t.Fatal("Done closed while the session lives")
			default:
			}

			c.lose(t, srv, s)
			select {
			case <-s.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done did not close within 10 s of a lease of 1 s lost")
			}
			c.back(srv)
			err := commit.Fence(2)
			assert.ErrorIs(t, err, ErrFenced)
			assert.Contains(t, err.Error(), "the member's session ended")
			other := member(t, srv, "fam")
			assert.Equal(t, Record{l.Token(), 1}, record(t, other, "ada"))
		})
	}
}

// TestClosedSessionTakesNoLock: after Close no lock is taken, and the
// locks it held are let go at once.
func TestClosedSessionTakesNoLock(t *testing.T) {
	srv := etcdtest.Start(t)
	s, other := member(t, srv, "fam"), member(t, srv, "fam")
	commit := NewCommitter(lock(t, s, "ada"), nil)
	require.NoError(t, s.Close())
	_, err := s.Lock(ctxFor(t, time.Second), "bo")
	assert.ErrorIs(t, err, ErrClosed)
	_, err = other.TryLock(ctxFor(t, 5*time.Second), "ada")
	assert.NoError(t, err, "a closed session's locks are let go")
	assert.NoError(t, s.Close(), "closing twice is nothing")
	<-s.Done()
	assert.ErrorIs(t, commit.Fence(1), ErrFenced, "a closed session commits nothing")
}
