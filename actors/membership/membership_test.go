package membership_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/membership"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// wait bounds every wait of these tests.
const wait = 15 * time.Second

// lease is the members' lease in these tests.
const lease = 2 * time.Second

func quiet() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
}

// running is a family the membership started: its actor system, the
// actor standing for the family actor, and the membership's listener
// on it.
type running struct {
	system   *actor.ActorSystem
	family   *actor.PID
	listener *actor.PID
	whole    bool
}

// summary is an end summary the membership asked for.
type summary struct {
	whole bool
	dirs  []string
	root  *messages.FamilyStopped
}

// families stands for the command's side: each family it starts is an
// actor system of its own whose family actor records what it is told.
type families struct {
	root      string
	started   chan running
	told      chan any
	summaries chan summary
	closed    chan struct{}

	mu      sync.Mutex
	standBy []bool // whether each StandBy had a session
}

func newFamilies(root string) *families {
	return &families{root: root, started: make(chan running, 4), told: make(chan any, 256), summaries: make(chan summary, 4), closed: make(chan struct{}, 4)}
}

func (f *families) FreshRoot() error {
	exists, err := state.Exists(f.root)
	if err != nil || exists {
		return err
	}
	return os.WriteFile(filepath.Join(f.root, state.StateFile), []byte("{}"), 0o600)
}

func (f *families) Whole(_ *fence.Session, hold *member.Holding, token uint64, listen membership.Listener) (membership.Family, error) {
	if hold == nil || token == 0 {
		return membership.Family{}, errors.New("no hold")
	}
	return f.start(listen, true)
}

func (f *families) Spread(_ *fence.Session, listen membership.Listener, _ *actor.Props) (membership.Family, error) {
	return f.start(listen, false)
}

func (f *families) start(listen membership.Listener, whole bool) (membership.Family, error) {
	system := quiet()
	pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case family.Activate, family.Release, family.SubtreeDone, messages.ShutdownFamily:
			f.told <- msg
		}
	}))
	l, err := listen(system)
	if err != nil {
		system.Shutdown()
		return membership.Family{}, err
	}
	f.started <- running{system: system, family: pid, listener: l, whole: whole}
	return membership.Family{System: system, PID: pid, Close: func() {
		system.Shutdown()
		f.closed <- struct{}{}
	}}, nil
}

func (f *families) Summarize(whole bool, dirs []string, root *messages.FamilyStopped) {
	f.summaries <- summary{whole: whole, dirs: dirs, root: root}
}

func (f *families) StandBy(s *fence.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.standBy = append(f.standBy, s != nil)
}

// run is one membership under test.
type run struct {
	t       *testing.T
	srv     *etcdtest.Server
	system  *actor.ActorSystem
	pid     *actor.PID
	session *fence.Session
	fams    *families
	phases  chan membership.Phase
	ended   chan error
	root    string
}

// etcd starts etcd for t; these tests do not run without it.
func etcd(t *testing.T) *etcdtest.Server {
	require.NotEmpty(t, etcdtest.Binary(), "the membership's tests need etcd")
	return etcdtest.Start(t)
}

// dial is the session configuration of family on srv.
func dial(srv *etcdtest.Server) fence.Config {
	return fence.Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: lease}
}

// session opens a session on srv, closed when the test ends.
func session(t *testing.T, srv *etcdtest.Server) *fence.Session {
	t.Helper()
	s, err := fence.Open(dial(srv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// start runs a membership of the family on srv, its shared root root.
func start(t *testing.T, srv *etcdtest.Server, root string, spread bool) *run {
	t.Helper()
	s, err := fence.Open(dial(srv))
	require.NoError(t, err)
	r := &run{t: t, srv: srv, system: quiet(), session: s, fams: newFamilies(root),
		phases: make(chan membership.Phase, 256), ended: make(chan error, 1), root: root}
	t.Cleanup(r.system.Shutdown)
	r.pid = r.system.Root.Spawn(membership.Props(membership.Config{
		Name: "m1", Family: "fam", Address: "127.0.0.1:1", Root: root, Spread: spread,
		Session: s, Dial: dial(srv), Lease: lease, Grace: time.Second, StopLimit: 5 * time.Second,
		Families: r.fams,
		Changed: func(p membership.Phase) {
			select {
			case r.phases <- p:
			default:
			}
		},
		Ended: func(err error) { r.ended <- err },
	}))
	return r
}

// reach waits until the membership enters each of want, in order.
func (r *run) reach(want ...membership.Phase) {
	r.t.Helper()
	deadline := time.After(wait)
	for _, p := range want {
		for got := false; !got; {
			select {
			case seen := <-r.phases:
				got = seen == p
			case <-deadline:
				r.t.Fatalf("the membership did not reach %s within %s", p, wait)
			}
		}
	}
}

func (r *run) signal() { r.system.Root.Send(r.pid, membership.Signal{}) }

// outcome waits for the membership's outcome.
func (r *run) outcome() error {
	r.t.Helper()
	select {
	case err := <-r.ended:
		return err
	case <-time.After(wait):
		r.t.Fatalf("the membership did not end within %s", wait)
		return nil
	}
}

// family waits for the family the membership starts.
func (r *run) family() running {
	r.t.Helper()
	select {
	case f := <-r.fams.started:
		return f
	case <-time.After(wait):
		r.t.Fatalf("no family started within %s", wait)
		return running{}
	}
}

// told waits for the family to be told a message that match accepts.
func (r *run) told(what string, match func(any) bool) {
	r.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case msg := <-r.fams.told:
			if match(msg) {
				return
			}
		case <-deadline:
			r.t.Fatalf("the family was not told %s within %s", what, wait)
		}
	}
}

func shutdown(now bool) func(any) bool {
	return func(msg any) bool { s, ok := msg.(messages.ShutdownFamily); return ok && s.Now == now }
}

// members lists the live members' names.
func members(t *testing.T, s *fence.Session) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	infos, err := member.Live(ctx, s)
	require.NoError(t, err)
	var names []string
	for _, m := range infos {
		names = append(names, m.Name)
	}
	return names
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// standingBy starts etcd, a session (other) that holds the root's lock,
// and a membership of the family placed whole, standing by for it.
func standingBy(t *testing.T) (*etcdtest.Server, *fence.Session, *run) {
	srv := etcd(t)
	other := session(t, srv)
	_, err := other.Lock(ctxFor(t), member.RootBeing)
	require.NoError(t, err)
	r := start(t, srv, t.TempDir(), false)
	r.reach(membership.Joining, membership.StandingBy)
	return srv, other, r
}

// TestSignalWhileStandingByLeaves: a member standing by for a lock
// another holds leaves at a signal, its record deleted, and ends with
// nil (exit 0).
func TestSignalWhileStandingByLeaves(t *testing.T) {
	_, other, r := standingBy(t)
	assert.Equal(t, []string{"m1"}, members(t, other))
	r.signal()
	require.NoError(t, r.outcome())
	assert.Empty(t, members(t, other), "the record goes at once")
	select {
	case <-r.session.Done():
	default:
		t.Fatal("the membership's session is still open")
	}
}

// TestLostLeaseRejoins: a member whose lease ends while it stands by
// opens a new session and joins anew.
func TestLostLeaseRejoins(t *testing.T) {
	srv, other, r := standingBy(t)
	_, err := srv.Client(t).Revoke(ctxFor(t), clientv3.LeaseID(r.session.Lease()))
	require.NoError(t, err)
	r.reach(membership.Stopping, membership.Reopening, membership.Joining, membership.StandingBy)
	assert.Equal(t, []string{"m1"}, members(t, other), "joined again under a new lease")
	r.signal()
	require.NoError(t, r.outcome())
}

// TestLostLeaseWhileHoldingStopsTheFamilyAndRejoins: the family held
// under a lost lease stops at once, without a summary, and the member
// holds it again under a new one.
func TestLostLeaseWhileHoldingStopsTheFamilyAndRejoins(t *testing.T) {
	srv := etcd(t)
	r := start(t, srv, t.TempDir(), false)
	r.reach(membership.Joining, membership.StandingBy, membership.Holding)
	r.family()
	_, err := srv.Client(t).Revoke(ctxFor(t), clientv3.LeaseID(r.session.Lease()))
	require.NoError(t, err)
	r.reach(membership.Stopping, membership.Reopening, membership.Joining, membership.StandingBy, membership.Holding)
	select {
	case <-r.fams.closed:
	default:
		t.Fatal("the first family was not closed before the member joined anew")
	}
	again := r.family()
	assert.Empty(t, r.fams.summaries, "a family stopped at once writes no summary")
	r.signal()
	r.told("its shutdown", shutdown(false))
	again.system.Root.Send(again.listener, messages.FamilyStopped{Status: state.StatusStopped})
	require.NoError(t, r.outcome())
}

// TestExhaustedFamilyEndIsRecorded: a family whose root is exhausted
// ends: the member writes its summary, records the family's end, and
// ends with nil; no member holds the family again.
func TestExhaustedFamilyEndIsRecorded(t *testing.T) {
	srv := etcd(t)
	r := start(t, srv, t.TempDir(), false)
	r.reach(membership.Joining, membership.StandingBy, membership.Holding)
	f := r.family()
	f.system.Root.Send(f.listener, messages.FamilyStopped{Status: state.StatusExhausted})
	require.NoError(t, r.outcome())
	sum := <-r.fams.summaries
	assert.True(t, sum.whole)
	require.NotNil(t, sum.root)
	assert.Equal(t, state.StatusExhausted, sum.root.Status)
	status, ended, err := session(t, srv).FamilyEnded(ctxFor(t))
	require.NoError(t, err)
	assert.True(t, ended, "the family's end is recorded")
	assert.Equal(t, state.StatusExhausted, status)
}

// TestFailedFamilyIsHandedOver: a family that failed on this member is
// not ended: the member ends with its error and lets the root's lock go
// to a standby.
func TestFailedFamilyIsHandedOver(t *testing.T) {
	srv := etcd(t)
	r := start(t, srv, t.TempDir(), false)
	r.reach(membership.Holding)
	f := r.family()
	failure := errors.New("the gateway failed")
	f.system.Root.Send(f.listener, messages.FamilyStopped{Status: state.StatusFailed, Err: failure})
	require.ErrorIs(t, r.outcome(), failure)
	other := session(t, srv)
	_, ended, err := other.FamilyEnded(ctxFor(t))
	require.NoError(t, err)
	assert.False(t, ended)
	l, err := other.TryLock(ctxFor(t), member.RootBeing)
	require.NoError(t, err, "the root's lock went with the member")
	require.NoError(t, l.Unlock(ctxFor(t)))
}

// TestSignalsEscalateOnTheWholeFamily: a first signal hands the family
// over at its next round boundary, a second stops it at once; its stop
// then ends the member with nil, the family not ended.
func TestSignalsEscalateOnTheWholeFamily(t *testing.T) {
	srv := etcd(t)
	r := start(t, srv, t.TempDir(), false)
	r.reach(membership.Holding)
	f := r.family()
	r.signal()
	r.told("its shutdown", shutdown(false))
	r.signal()
	r.told("its shutdown at once", shutdown(true))
	f.system.Root.Send(f.listener, messages.FamilyStopped{Status: state.StatusExhausted})
	require.NoError(t, r.outcome())
	_, ended, err := session(t, srv).FamilyEnded(ctxFor(t))
	require.NoError(t, err)
	assert.False(t, ended, "a family handed over at a signal is not ended")
}

// TestSpreadSignalsEscalateThroughThePlacer: the member that writes the
// root's first state places the root at once; a first signal has the
// placer hand its beings over, a second has it shut them down at their
// next round boundary, a third at once; the family's stop ends the
// member with the beings it held in its summary.
func TestSpreadSignalsEscalateThroughThePlacer(t *testing.T) {
	srv := etcd(t)
	root := t.TempDir()
	r := start(t, srv, root, true)
	r.reach(membership.Joining, membership.StandingBy, membership.Placing)
	f := r.family()
	r.told("the root's activation", func(msg any) bool {
		a, ok := msg.(family.Activate)
		return ok && a.Dir == filepath.Clean(root)
	})
	exists, err := state.Exists(root)
	require.NoError(t, err)
	require.True(t, exists, "the root's first state is written")
	r.signal()
	r.told("the root's release", func(msg any) bool { _, ok := msg.(family.Release); return ok })
	r.signal()
	r.told("its shutdown", shutdown(false))
	r.signal()
	r.told("its shutdown at once", shutdown(true))
	f.system.Root.Send(f.listener, messages.FamilyStopped{Status: state.StatusStopped})
	require.NoError(t, r.outcome())
	sum := <-r.fams.summaries
	assert.False(t, sum.whole)
	assert.True(t, slices.Contains(sum.dirs, filepath.Clean(root)), "the root stopped here: %v", sum.dirs)
}

// TestSpreadFamilyEndedHoldsNothing: a member of a family that has
// ended runs nothing and ends with nil.
func TestSpreadFamilyEndedHoldsNothing(t *testing.T) {
	srv := etcd(t)
	other := session(t, srv)
	l, err := other.Lock(ctxFor(t), member.RootBeing)
	require.NoError(t, err)
	require.NoError(t, l.EndFamily(ctxFor(t), state.StatusExhausted))
	require.NoError(t, l.Unlock(ctxFor(t)))
	r := start(t, srv, t.TempDir(), true)
	r.reach(membership.StandingBy, membership.Stopping)
	require.NoError(t, r.outcome())
	assert.Empty(t, r.fams.started, "no family is started")
}

// TestNameTakenByAnEarlierLeaseIsWaitedFor: a member whose name is
// still held by a record of an earlier lease (etcd away, then back)
// tries again, and joins once that lease is over.
func TestNameTakenByAnEarlierLeaseIsWaitedFor(t *testing.T) {
	srv := etcd(t)
	root := t.TempDir()
	earlier := session(t, srv)
	_, err := member.Join(ctxFor(t), earlier, "fam", member.Config{Name: "m1", Address: "127.0.0.1:1", Root: root, Placement: membership.PlacementOf(false)})
	require.NoError(t, err)
	r := start(t, srv, root, false)
	r.reach(membership.Joining)
	select {
	case p := <-r.phases:
		t.Fatalf("the member went on to %s while its name was taken", p)
	case err := <-r.ended:
		t.Fatalf("the member ended while its name was taken: %v", err)
	case <-time.After(lease / 2):
	}
	_, err = srv.Client(t).Revoke(ctxFor(t), clientv3.LeaseID(earlier.Lease()))
	require.NoError(t, err)
	r.reach(membership.StandingBy, membership.Holding)
	f := r.family()
	r.signal()
	r.told("its shutdown", shutdown(false))
	f.system.Root.Send(f.listener, messages.FamilyStopped{Status: state.StatusStopped})
	require.NoError(t, r.outcome())
}
