package member

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/test/etcdtest"
)

// longLease is longer than any wait of these tests: a lease that ends
// within one was ended by the lifeline, not by etcd.
const longLease = 60 * time.Second

// holderProcess is a holder's listening address as a process has it: a
// listener and the connections it accepted, all closed at its death.
type holderProcess struct {
	ln       net.Listener
	accepted chan net.Conn
	mu       sync.Mutex
	conns    []net.Conn
}

func listen(t *testing.T) *holderProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &holderProcess{ln: ln, accepted: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			p.accepted <- c
		}
	}()
	t.Cleanup(p.die)
	return p
}

// hangUp closes the next connection accepted; the address still
// listens.
func (p *holderProcess) hangUp(t *testing.T) {
	t.Helper()
	select {
	case c := <-p.accepted:
		_ = c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("no connection was accepted")
	}
}

// die closes the address and every connection, as the kernel does when
// the process dies.
func (p *holderProcess) die() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// lifelineWorld is a family whose holder joined at address and holds the
// root's lock under a long lease, and a standby whose lifeline watches
// it.
type lifelineWorld struct {
	srv             *etcdtest.Server
	root            string
	holder, standby *fence.Session
	member          *Member // the holder's
	sights          chan Sight
}

func newLifelineWorld(t *testing.T, address string) *lifelineWorld {
	t.Helper()
	srv := etcdtest.Start(t)
	open := func() *fence.Session {
		s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: longLease})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	root := t.TempDir()
	w := &lifelineWorld{srv: srv, root: root, holder: open(), standby: open(), sights: make(chan Sight, 64)}
	var err error
	w.member, err = Join(ctxFor(t), w.holder, "fam", Config{Name: "h", Address: address, Root: root})
	require.NoError(t, err)
	_, err = w.holder.Lock(ctxFor(t), RootBeing)
	require.NoError(t, err)
	standby, err := Join(ctxFor(t), w.standby, "fam", Config{Name: "s", Address: "127.0.0.1:1", Root: root})
	require.NoError(t, err)
	l := &Lifeline{Session: w.standby, Self: standby.Info().Lease,
		Every: 50 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
		Seen: func(s Sight) {
			select {
			case w.sights <- s:
			default: // a test reads only the first few
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// see waits for the lifeline to learn what about member h, the holder.
func (w *lifelineWorld) see(t *testing.T, what Seen) {
	t.Helper()
	w.seeOf(t, "h", what)
}

// seeOf waits for the lifeline to learn what about member name; it
// fails on a sight of another member's death.
func (w *lifelineWorld) seeOf(t *testing.T, name string, what Seen) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-w.sights:
			if s.Member != name {
				require.NotEqual(t, LeaseEnded, s.What, "the lifeline ended the lease of %s", s.Member)
				continue
			}
			if s.What == what {
				return
			}
		case <-deadline:
			t.Fatalf("the lifeline did not see %d of %s", what, name)
		}
	}
}

// leaseLeft is what is left of the holder's lease; -1 when it ended.
func (w *lifelineWorld) leaseLeft(t *testing.T) int64 {
	t.Helper()
	return leaseLeft(t, w.srv, w.holder)
}

// leaseLeft is what is left of s's lease; -1 when it ended.
func leaseLeft(t *testing.T, srv *etcdtest.Server, s *fence.Session) int64 {
	t.Helper()
	resp, err := srv.Client(t).TimeToLive(ctxFor(t), clientv3.LeaseID(s.Lease()))
	require.NoError(t, err)
	return resp.TTL
}

// join is one more member, name, at address, of w's family.
func (w *lifelineWorld) join(t *testing.T, name, address string) *fence.Session {
	t.Helper()
	s, err := fence.Open(fence.Config{Endpoints: w.srv.Endpoints(), Family: "fam", TTL: longLease})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = Join(ctxFor(t), s, "fam", Config{Name: name, Address: address, Root: w.root})
	require.NoError(t, err)
	return s
}

// TestLifelineEndsTheLeaseOfAHolderThatDied: the holder's address closes
// the open connection and refuses the next: the standby ends its lease,
// and takes the lock long before the lease would have ended.
func TestLifelineEndsTheLeaseOfAHolderThatDied(t *testing.T) {
	p := listen(t)
	w := newLifelineWorld(t, p.ln.Addr().String())
	w.see(t, Reached)
	require.Positive(t, w.leaseLeft(t))

	p.die()
	w.see(t, LeaseEnded)
	require.Equal(t, int64(-1), w.leaseLeft(t), "the holder's lease was ended")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := w.standby.Lock(ctx, RootBeing)
	require.NoError(t, err, "the standby takes the lock")
	require.NotZero(t, lock.Token())
}

// TestLifelineEndsTheLeaseOfAStandbyThatDied: a standby waiting for the
// lock dies; its lease ends, and its place in the lock's queue with it,
// so that a later standby is next.
func TestLifelineEndsTheLeaseOfAStandbyThatDied(t *testing.T) {
	h := listen(t)
	w := newLifelineWorld(t, h.ln.Addr().String())
	q := listen(t)
	queued := w.join(t, "q", q.ln.Addr().String())
	// The wait itself is not awaited: etcd's mutex does not end a wait
	// whose lease ended (the member closes its session instead).
	waitCtx, stopWaiting := context.WithCancel(context.Background())
	t.Cleanup(stopWaiting)
	go func() { _, _ = queued.Lock(waitCtx, RootBeing) }()
	require.Eventually(t, func() bool { return waiters(t, w) == 2 }, 10*time.Second, 10*time.Millisecond, "q waits for the lock")
	w.seeOf(t, "q", Reached)

	q.die()
	w.seeOf(t, "q", LeaseEnded)
	require.Equal(t, int64(-1), leaseLeft(t, w.srv, queued), "q's lease was ended")
	require.Equal(t, 1, waiters(t, w), "q left the lock's queue")
	require.Positive(t, w.leaseLeft(t), "the holder's lease lives on")
}

// TestLifelineLeavesALiveHolder: a connection the holder closes while
// its address still accepts is no death; nor is an address never reached
// (here: one that refuses from the start, as a firewall that rejects
// would).
func TestLifelineLeavesALiveHolder(t *testing.T) {
	t.Run("hung up, still listening", func(t *testing.T) {
		p := listen(t)
		w := newLifelineWorld(t, p.ln.Addr().String())
		w.see(t, Reached)
		p.hangUp(t)
		w.see(t, Alive)
		p.hangUp(t)
		w.see(t, Alive)
		require.Positive(t, w.leaseLeft(t))
	})
	t.Run("never reached", func(t *testing.T) {
		p := listen(t)
		p.die() // its port now refuses
		w := newLifelineWorld(t, p.ln.Addr().String())
		w.see(t, Unreached)
		w.see(t, Unreached)
		require.Positive(t, w.leaseLeft(t))
	})
}

// TestLifelineLeavesAMemberThatLeft: a member whose record is gone (it
// left) is no longer watched, so the death of its address ends nothing;
// a member still listed is watched on.
func TestLifelineLeavesAMemberThatLeft(t *testing.T) {
	h := listen(t)
	w := newLifelineWorld(t, h.ln.Addr().String())
	n := listen(t)
	next := w.join(t, "n", n.ln.Addr().String())
	w.see(t, Reached)
	w.seeOf(t, "n", Reached)

	require.NoError(t, w.member.Leave(ctxFor(t)))
	w.see(t, Left)
	h.die()
	n.die()
	w.seeOf(t, "n", LeaseEnded) // and no end of h's lease before it
	require.Equal(t, int64(-1), leaseLeft(t, w.srv, next))
	require.Positive(t, w.leaseLeft(t), "the lease of the member that left lives on")
}

// waiters counts the keys under the root's lock: its holder and those
// waiting for it.
func waiters(t *testing.T, w *lifelineWorld) int {
	t.Helper()
	resp, err := w.srv.Client(t).Get(ctxFor(t), fence.Root+"fam/lock/"+RootBeing+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return int(resp.Count)
}
