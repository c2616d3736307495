package placer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/placer"
	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// wait bounds every wait of these tests.
const wait = 10 * time.Second

const root = "/family"

// hold is a being's hold that the test can lose.
type hold struct {
	lost chan struct{}
	once sync.Once
	err  error
}

func (h *hold) Hold(string) (*durable.Held, durable.Fence, error) { return nil, nil, nil }
func (h *hold) ChildrenElsewhere() bool                           { return true }
func (h *hold) Lost() <-chan struct{}                             { return h.lost }
func (h *hold) Err() error                                        { return h.err }
func (h *hold) lose(err error) {
	h.once.Do(func() { h.err = err; close(h.lost) })
}

// member is one member under test: its store, its placer, and what the
// placer told the family (a recording actor).
type member struct {
	t      *testing.T
	system *actor.ActorSystem
	store  *placement.MemoryMember
	placer *actor.PID
	family *actor.PID
	told   chan any
	done   chan placer.Outcome
	clock  *testkit.ManualClock

	mu    sync.Mutex
	holds map[string]*hold          // by being
	locks map[string]placement.Lock // by being
	reads map[string]int            // the identity reads, by being
}

// holdsMade is how many beings the placer has started under a hold.
func (m *member) holdsMade() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.holds)
}

// identityReads is how often the placer read being's identity.
func (m *member) identityReads(being string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads[being]
}

// lock is the lock the member took of being.
func (m *member) lock(being string) placement.Lock {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.locks[being]
}

// start starts a member named name of fam; identityErr fails the
// identity of the children it names.
func start(t *testing.T, fam *placement.Memory, name string, identityErr map[string]bool, mods ...func(*placer.Config)) *member {
	t.Helper()
	store, err := fam.Join(name)
	require.NoError(t, err)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(system.Shutdown)
	m := &member{t: t, system: system, store: store, told: make(chan any, 1024), done: make(chan placer.Outcome, 1),
		clock: testkit.NewManualClock(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)), holds: map[string]*hold{}, locks: map[string]placement.Lock{}, reads: map[string]int{}}
	m.family = system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case family.Activate, family.Release, family.SubtreeDone, messages.ShutdownFamily, marker:
			m.told <- msg
		}
	}))
	cfg := placer.Config{
		Store: store,
		Root:  root,
		Lease: time.Second,
		Hold: func(l placement.Lock) placer.Hold {
			h := &hold{lost: make(chan struct{})}
			m.mu.Lock()
			m.holds[l.Being()] = h
			m.locks[l.Being()] = l
			m.mu.Unlock()
			return h
		},
		Identity: func(dir string) (string, string, string, error) {
			id := filepath.Base(dir)
			m.mu.Lock()
			m.reads[id]++
			m.mu.Unlock()
			if identityErr[id] {
				return "", "", "", errors.New("state.json: no such file")
			}
			return "Name-" + id, "T" + id, "specialty", nil
		},
		Done:    func(out placer.Outcome) { m.done <- out },
		Clock:   m.clock,
		Shuffle: func([]string) {},
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	m.placer = system.Root.Spawn(placer.Props(cfg))
	t.Cleanup(func() { _ = system.Root.StopFuture(m.placer).Wait() })
	return m
}

func (m *member) begin(rootLock placement.Lock) {
	m.system.Root.Send(m.placer, placer.Begin{Family: m.family, Root: rootLock})
}

// next is the next message the placer told the family, of type T.
func next[T any](m *member) T {
	m.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case msg := <-m.told:
			if v, ok := msg.(T); ok {
				return v
			}
			m.t.Fatalf("the family was told %T %+v, not a %T", msg, msg, *new(T))
		case <-deadline:
			m.t.Fatalf("the family was not told a %T within %s", *new(T), wait)
		}
	}
}

// marker is what the test itself tells the recording family, after
// whatever the placer told it before.
type marker struct{}

// toldNothingMore asserts that the placer told the family nothing since
// the last message read, of what it told it before this call.
func (m *member) toldNothingMore() {
	m.t.Helper()
	m.system.Root.Send(m.family, marker{})
	next[marker](m)
}

// lookWhere waits for a look of the placer, recorded by a Config.AfterLook
// on looks, for which ok holds.
func lookWhere(t *testing.T, looks <-chan placement.Placement, ok func(placement.Placement) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case p := <-looks:
			if ok(p) {
				return
			}
		case <-deadline:
			t.Fatalf("no look as awaited within %s", wait)
		}
	}
}

// activations collects n Activate messages, by directory.
func activations(m *member, n int) map[string]family.Activate {
	m.t.Helper()
	out := map[string]family.Activate{}
	for range n {
		a := next[family.Activate](m)
		out[a.Dir] = a
	}
	return out
}

// childDir is the directory of a child of the root.
func childDir(id string) string { return filepath.Join(root, state.ChildRecordDir(id)) }

// registerChildren registers children of the root under a lock taken
// and let go by a member of its own.
func registerChildren(t *testing.T, fam *placement.Memory, ids ...string) {
	t.Helper()
	writer, err := fam.Join("writer")
	require.NoError(t, err)
	got, err := writer.TryLockAll(context.Background(), []string{placement.RootBeing})
	require.NoError(t, err)
	for _, id := range ids {
		require.NoError(t, fam.Register(got[placement.RootBeing], id))
	}
	require.NoError(t, got[placement.RootBeing].Unlock(context.Background()))
	writer.Expire()
}

func outcome(m *member) placer.Outcome {
	m.t.Helper()
	select {
	case out := <-m.done:
		return out
	case <-time.After(wait):
		m.t.Fatalf("the placer reported no outcome within %s", wait)
		return placer.Outcome{}
	}
}

func TestAloneTheMemberTakesEveryBeing(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a", "b")
	m := start(t, fam, "m1", nil)
	m.begin(nil)
	got := activations(m, 3)
	require.Contains(t, got, root)
	assert.Empty(t, got[root].Name, "the root's identity is its configuration's")
	require.Contains(t, got, childDir("a"))
	assert.Equal(t, "Name-a", got[childDir("a")].Name, "a child is activated as its state names it")
	assert.Equal(t, "Ta", got[childDir("a")].Ticker)
	p, err := m.store.Look(context.Background())
	require.NoError(t, err)
	assert.Empty(t, p.Locked, "every lock is the member's own")
}

func TestASecondMemberTakesItsShare(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a", "b", "c")
	m1 := start(t, fam, "m1", nil)
	m1.begin(nil)
	activations(m1, 4)

	m2 := start(t, fam, "m2", nil)
	m2.begin(nil)
	// m1 gives back the two beyond its share of two, greatest id first,
	// the root last.
	r1 := next[family.Release](m1)
	assert.Equal(t, childDir("c"), r1.Dir)
	r2 := next[family.Release](m1)
	assert.Equal(t, childDir("b"), r2.Dir)
	assert.False(t, r1.ForGood)
	for _, r := range []family.Release{r1, r2} {
		m1.system.Root.Send(m1.placer, messages.BeingReleased{Dir: r.Dir, Status: state.StatusStopped})
	}
	got := activations(m2, 2)
	assert.Contains(t, got, childDir("b"))
	assert.Contains(t, got, childDir("c"))
}

func TestAnExhaustedChildIsRecordedAndNotTakenAgain(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a")
	m := start(t, fam, "m1", nil)
	m.begin(nil)
	activations(m, 2)
	watch, stop := context.WithCancel(context.Background())
	defer stop()
	changed := m.store.Watch(watch)
	m.system.Root.Send(m.placer, messages.BeingReleased{Dir: childDir("a"), Status: state.StatusExhausted})
	deadline := time.After(wait)
	for {
		p, err := m.store.Look(context.Background())
		require.NoError(t, err)
		if p.Ended["a"] == state.StatusExhausted {
			assert.Equal(t, []string{placement.RootBeing}, p.Placeable(), "an ended being is not placed again")
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the end of a was not recorded within %s", wait)
		}
	}
}

func TestTheRootsExhaustionStopsTheFamilyChildrenFirst(t *testing.T) {
	fam := placement.NewMemory()
	// root ── a ── g
	writer, err := fam.Join("writer")
	require.NoError(t, err)
	got, err := writer.TryLockAll(context.Background(), []string{placement.RootBeing})
	require.NoError(t, err)
	require.NoError(t, fam.Register(got[placement.RootBeing], "a"))
	require.NoError(t, got[placement.RootBeing].Unlock(context.Background()))
	got, err = writer.TryLockAll(context.Background(), []string{"a"})
	require.NoError(t, err)
	require.NoError(t, fam.Register(got["a"], "g"))
	require.NoError(t, got["a"].Unlock(context.Background()))
	writer.Expire()

	m := start(t, fam, "m1", nil)
	m.begin(nil)
	activations(m, 3)
	m.system.Root.Send(m.placer, messages.BeingReleased{Dir: root, Status: state.StatusExhausted})
	gDir := filepath.Join(childDir("a"), state.ChildRecordDir("g"))
	first := next[family.Release](m)
	assert.Equal(t, gDir, first.Dir, "the leaf stops first")
	m.system.Root.Send(m.placer, messages.BeingReleased{Dir: gDir, Status: state.StatusStopped})
	second := next[family.Release](m)
	assert.Equal(t, childDir("a"), second.Dir, "then its parent")
	m.system.Root.Send(m.placer, messages.BeingReleased{Dir: childDir("a"), Status: state.StatusStopped})
	next[messages.ShutdownFamily](m)
	m.system.Root.Send(m.placer, messages.FamilyStopped{Status: state.StatusExhausted})
	assert.Equal(t, placer.Outcome{Held: []string{root, childDir("a"), gDir}}, outcome(m), "every being that ended here")
	p, err := m.store.Look(context.Background())
	require.NoError(t, err)
	assert.True(t, p.FamilyEnded)
}

func TestALeavingMemberHandsItsBeingsOverChildrenFirst(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a")
	m1 := start(t, fam, "m1", nil)
	m1.begin(nil)
	activations(m1, 2)
	m1.system.Root.Send(m1.placer, placer.Leave{})
	r := next[family.Release](m1)
	assert.Equal(t, childDir("a"), r.Dir, "the child stops before its parent")
	m1.system.Root.Send(m1.placer, messages.BeingReleased{Dir: r.Dir, Status: state.StatusStopped})
	r = next[family.Release](m1)
	assert.Equal(t, root, r.Dir)
	m1.system.Root.Send(m1.placer, messages.BeingReleased{Dir: r.Dir, Status: state.StatusStopped})
	next[messages.ShutdownFamily](m1)
	m1.system.Root.Send(m1.placer, messages.FamilyStopped{Status: state.StatusStopped})
	assert.Equal(t, placer.Outcome{Held: []string{root, childDir("a")}}, outcome(m1), "the beings it held")

	p, err := m1.store.Look(context.Background())
	require.NoError(t, err)
	assert.Zero(t, p.Members, "the leaver is not counted")
	assert.Empty(t, p.Ended, "a handover records no end")
}

// rootHereChildThere starts m1, holding the root, and m2, holding the
// root's child a; m1's looks are recorded on the channel returned.
func rootHereChildThere(t *testing.T) (fam *placement.Memory, m1, m2 *member, looks chan placement.Placement) {
	fam = placement.NewMemory()
	registerChildren(t, fam, "a")
	looks = make(chan placement.Placement, 1024)
	m1 = start(t, fam, "m1", nil, func(c *placer.Config) {
		c.AfterLook = func(p placement.Placement) { looks <- p }
	})
	m1.begin(nil)
	activations(m1, 2)
	m2 = start(t, fam, "m2", nil)
	m2.begin(nil)
	r := next[family.Release](m1)
	require.Equal(t, childDir("a"), r.Dir, "m1 gives the child back, the root last")
	m1.system.Root.Send(m1.placer, messages.BeingReleased{Dir: r.Dir, Status: state.StatusStopped})
	require.Contains(t, activations(m2, 1), childDir("a"))
	return fam, m1, m2, looks
}

// TestMembersLeavingTogetherStopChildrenFirst: members signalled at
// once mark their leaves a little apart. The parent's member looked
// before the child's member marked its leave, and still waits for the
// child: its leave has not settled (member.Settled).
func TestMembersLeavingTogetherStopChildrenFirst(t *testing.T) {
	_, m1, m2, looks := rootHereChildThere(t)
	m1.system.Root.Send(m1.placer, placer.Leave{})
	lookWhere(t, looks, func(p placement.Placement) bool { return p.LeavingHeld[placement.RootBeing] && !p.LeavingHeld["a"] })

	m2.system.Root.Send(m2.placer, placer.Leave{})
	r := next[family.Release](m2)
	require.Equal(t, childDir("a"), r.Dir)
	// m1 looked again on m2's mark: the look before it was acted on.
	lookWhere(t, looks, func(p placement.Placement) bool { return p.LeavingHeld["a"] })
	m1.toldNothingMore()

	m2.system.Root.Send(m2.placer, messages.BeingReleased{Dir: r.Dir, Status: state.StatusStopped})
	r = next[family.Release](m1)
	assert.Equal(t, root, r.Dir, "the parent stops once its child has")
	p, err := m1.store.Look(context.Background())
	require.NoError(t, err)
	assert.False(t, p.Locked["a"], "the child's lock was let go first")
}

// TestALeavingMemberHandsAParentOverOnceSettled: with the child's member
// staying, the parent waits for the settle of its member's leave only.
func TestALeavingMemberHandsAParentOverOnceSettled(t *testing.T) {
	fam, m1, _, looks := rootHereChildThere(t)
	m1.system.Root.Send(m1.placer, placer.Leave{})
	lookWhere(t, looks, func(p placement.Placement) bool { return p.LeavingHeld[placement.RootBeing] })
	// A member joining wakes m1 for another look.
	_, err := fam.Join("m3")
	require.NoError(t, err)
	lookWhere(t, looks, func(p placement.Placement) bool { return p.Members == 2 })
	m1.toldNothingMore()

	m1.clock.Advance(time.Second / 3)
	r := next[family.Release](m1)
	assert.Equal(t, root, r.Dir, "settled: a child on a member that stays holds its parent back no longer")
}

func TestARefusedStepEndsThePlacerForARejoin(t *testing.T) {
	fam := placement.NewMemory()
	m := start(t, fam, "m1", nil)
	m.begin(nil)
	activations(m, 1)
	m.mu.Lock()
	h := m.holds[placement.RootBeing]
	m.mu.Unlock()
	h.lose(fmt.Errorf("commit: %w", placement.ErrNotHeld))
	assert.Equal(t, placer.Outcome{Rejoin: true}, outcome(m))
}

func TestABeingThatCannotBeActivatedIsHeldBack(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a", "b")
	m := start(t, fam, "m1", map[string]bool{"a": true})
	m.begin(nil)
	got := activations(m, 2)
	assert.NotContains(t, got, childDir("a"))
	// Every change wakes a look; a is not tried again before its wait.
	require.NoError(t, fam.Register(m.lock(placement.RootBeing), "c"))
	got = activations(m, 1)
	assert.Contains(t, got, childDir("c"))
	assert.Equal(t, 1, m.identityReads("a"), "a is not tried again before its wait")
}

func TestABeingThatCannotBeActivatedIsTriedAgainAfterItsWait(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a")
	failing := map[string]bool{"a": true}
	m := start(t, fam, "m1", failing)
	m.begin(nil)
	activations(m, 1)
	m.clock.Advance(time.Second) // the first wait is the lease
	require.NoError(t, fam.Register(m.lock(placement.RootBeing), "b"))
	got := activations(m, 1)
	assert.Contains(t, got, childDir("b"))
	// a failed again (its identity still cannot be read), so it waits
	// twice as long: b's registration woke a look, and a's try failed
	// again without an activation.
	assert.Equal(t, 2, m.identityReads("a"), "a is tried again once its first wait is over")
	m.clock.Advance(1500 * time.Millisecond)
	require.NoError(t, fam.Register(m.lock(placement.RootBeing), "c"))
	got = activations(m, 1)
	assert.Contains(t, got, childDir("c"))
	assert.Equal(t, 2, m.identityReads("a"), "its second wait is twice the first")
}

func TestATakeoverStartsInWaves(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a", "b", "c", "d")
	m := start(t, fam, "m1", nil, func(c *placer.Config) { c.Wave = 2 })
	m.begin(nil)
	first := activations(m, 2)
	assert.Contains(t, first, root)
	assert.Contains(t, first, childDir("a"))
	m.system.Root.Send(m.placer, messages.BeingStarted{Dir: root})
	assert.Equal(t, childDir("b"), next[family.Activate](m).Dir, "one booted, one more starts")
	assert.Equal(t, 3, m.holdsMade(), "c and d wait: their holds are not made yet")
	// A being that ends before it booted frees its place in the wave too.
	m.system.Root.Send(m.placer, messages.BeingReleased{Dir: childDir("a"), Status: state.StatusFailed, Err: errors.New("its Las did not start")})
	assert.Equal(t, childDir("c"), next[family.Activate](m).Dir)
	m.system.Root.Send(m.placer, messages.BeingStarted{Dir: childDir("b")})
	assert.Equal(t, childDir("d"), next[family.Activate](m).Dir)
}

func TestABeingWaitingForItsWaveIsLetGoAtOnce(t *testing.T) {
	fam := placement.NewMemory()
	registerChildren(t, fam, "a")
	m := start(t, fam, "m1", nil, func(c *placer.Config) { c.Wave = 1 })
	m.begin(nil)
	assert.Equal(t, root, next[family.Activate](m).Dir)
	m.system.Root.Send(m.placer, placer.Leave{})
	// a never started: it is let go without the family hearing of it,
	// and the root, its parent, stops after it.
	r := next[family.Release](m)
	assert.Equal(t, root, r.Dir)
	p, err := m.store.Look(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, p.LeavingHeld, "a", "a's lock was let go")
}
