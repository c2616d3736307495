package main

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/limits"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// placement is the member record's placement for cl.
func placement(cl config.Cluster) string {
	if cl.Spread {
		return "being"
	}
	return "family"
}

// spread runs this member's share of a family whose beings are spread
// over its members (--cluster-placement being; docs/cluster.md#placement).
// Each being has a lock of its own; at every look (a third of the lease,
// or sooner when a lock, a registration or a member changes) the member
// takes free beings up to its share and gives back those beyond it at
// their next round boundary. It ends as a member holding the family
// does: at a signal (its beings stop and are handed over), at the
// family's end, or, when a step of one of its beings is refused or its
// lease ends, at once, to join again.
func (m *memberRun) spread() (rejoin bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	status, ended, err := member.Ended(ctx, m.session)
	cancel()
	switch {
	case err != nil:
		return false, fault.Errorf(fault.ClassCluster, "%w", err)
	case ended:
		m.log.Info("the family has ended: nothing to hold", "status", status)
		return false, nil
	}
	rootLock, rejoin, err := m.awaitRoot()
	switch {
	case errors.Is(err, errSignalled):
		return false, nil
	case err != nil || rejoin:
		return rejoin, err
	}
	p := &placer{m: m, mine: map[string]*placedBeing{}, lost: make(chan error, 1), retries: member.NewRetries(m.cl.Lease, retryMost)}
	unlockRoot := func() {
		if rootLock != nil {
			unlockLock(m, rootLock)
		}
	}
	rootOpts, err := rootOptions(m.rt, being.Run, m.e.log)
	if err != nil {
		unlockRoot()
		return false, err
	}
	by := held{member: m.cl.Member, placed: true, committed: member.CommittedOf(m.session, m.rt.StateDir), show: m.show.spreadOver(m.session)}
	if p.limited() {
		by.limiter = limits.ProxyProps(m.show.system, limiterLocator(m.session, m.cl.Family), 0)
		defer p.dropLimiter()
	}
	l, err := startFamilyWith(m.e, m.rt, rootOpts, by)
	if err != nil {
		unlockRoot()
		return false, err
	}
	defer m.show.standBy(m.session)
	p.live = l
	p.batch = fence.NewBatcher(m.session)
	defer p.batch.Close()
	if rootLock != nil {
		p.activate(member.RootBeing, rootLock, m.rt.StateDir)
	}
	m.log.Info("this member places the family's beings", "placement", "being")
	defer keepHistoryShort(m.session, m.cl.Compact, m.log)()
	return p.run()
}

// awaitRoot waits until the root's first state exists. The member that
// takes the root's lock while it does not writes it, and keeps the lock:
// it runs the root first.
func (m *memberRun) awaitRoot() (*fence.Lock, bool, error) {
	for {
		exists, err := state.Exists(m.rt.StateDir)
		if err != nil {
			return nil, false, err
		}
		if exists {
			return nil, false, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
		lock, err := m.session.TryLock(ctx, member.RootBeing)
		cancel()
		switch {
		case err == nil:
			if err := member.Fresh(m.rt.StateDir, m.rt.Identity, func() (*state.Being, error) {
				return being.NewState(m.rt.Identity, m.rt.StartingBalance, m.rt.Brama.Model, state.Now()), nil
			}); err != nil {
				ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
				_ = lock.Unlock(ctx)
				cancel()
				return nil, false, err
			}
			return lock, false, nil
		case !errors.Is(err, fence.ErrLocked):
			m.log.Warn("the root's lock could not be tried", "err", err)
		}
		select {
		case <-m.sigs:
			m.log.Info("signal received while waiting for the root's first state: leaving")
			return nil, false, errSignalled
		case <-m.session.Done():
			return nil, true, nil
		case <-time.After(m.cl.Lease / 4):
		}
	}
}

// retryMost bounds how long a member waits before it takes again a being
// that kept failing on it (member.Retries).
const retryMost = 5 * time.Minute

// placer is a member's share of a spread family: the beings it holds.
type placer struct {
	m     *memberRun
	live  *live
	batch *fence.Batcher
	mine  map[string]*placedBeing // by being id
	// stopping is set once the family stops for good (its end): beings
	// stop children first, and none is taken.
	stopping bool
	// leaving is set once a signal asks the member to leave: its beings
	// stop children first, across every member that leaves, and the
	// members that stay take them. hurry fires when they have taken too
	// long, and the rest stop at once.
	leaving bool
	hurry   <-chan time.Time
	// lost carries the first refusal of a step of any held being.
	lost chan error
	// retries holds back the beings that failed here.
	retries *member.Retries
	// limiter is the family's one spend limiter while this member holds
	// its lock (limiterLock), on the member's remote-served system.
	limiter     *actor.PID
	limiterLock *fence.Lock
}

// limiterLock is the lock of the family's one spend limiter
// (docs/cluster.md#beings-spread-over-members), taken like a being's.
const limiterLock = "limiter"

// limited says whether the family has spend limits, and so a limiter.
func (p *placer) limited() bool {
	return p.m.rt.SpendLimit != nil || p.m.rt.FamilySpendLimit != nil
}

// takeLimiter runs the family's limiter here when no member holds its
// lock. Its window starts empty, as a family's that restarts does.
func (p *placer) takeLimiter(pl member.Placement) {
	if !p.limited() || p.limiterLock != nil || pl.Locked[limiterLock] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.m.cl.Lease)
	lock, err := p.m.session.TryLock(ctx, limiterLock)
	cancel()
	if err != nil {
		return
	}
	pid, err := p.m.show.system.Root.SpawnNamed(limits.Props(p.m.rt.FamilySpendLimit, nil), limits.Name)
	if err != nil {
		p.m.log.Warn("the family's spend limiter cannot be started here", "err", err)
		unlockLock(p.m, lock)
		return
	}
	p.limiter, p.limiterLock = pid, lock
	p.m.log.Info("this member runs the family's spend limiter", "token", lock.Token())
}

// dropLimiter stops the limiter this member runs and lets its lock go.
func (p *placer) dropLimiter() {
	if p.limiter == nil {
		return
	}
	_ = p.m.show.system.Root.StopFuture(p.limiter).Wait()
	unlockLock(p.m, p.limiterLock)
	p.limiter, p.limiterLock = nil, nil
}

// limiterLocator finds the member that runs the family's limiter,
// asking etcd at most once a second.
func limiterLocator(session *fence.Session, family string) limits.Locate {
	var (
		mu      sync.Mutex
		address string
		at      time.Time
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if address != "" && time.Since(at) < time.Second {
			return address, nil
		}
		info, ok, err := member.Holder(ctx, session.Client(), family, limiterLock)
		switch {
		case err != nil:
			return "", err
		case !ok:
			return "", errors.New("no member runs the family's spend limiter now")
		}
		address, at = info.Address, time.Now()
		return address, nil
	}
}

// placedBeing is a being this member holds.
type placedBeing struct {
	id, dir   string
	lock      *fence.Lock
	hold      *member.Holding
	releasing bool
	// forGood is set when the being was asked to stop for good, with
	// its parent: its end is recorded once it has stopped.
	forGood bool
	// awaitingChildren is set while the being, stopping for good,
	// waits for its children to end (messages.SubtreeStopping).
	awaitingChildren bool
	// gone is closed once the being is let go.
	gone chan struct{}
}

// run looks and reacts until the member's part of the family ends.
func (p *placer) run() (rejoin bool, err error) {
	m := p.m
	wake, stopWatch := watchPlacement(m.session)
	defer stopWatch()
	tick := time.NewTicker(m.cl.Lease / 3)
	defer tick.Stop()
	p.look()
	for {
		if (p.stopping || p.leaving) && len(p.mine) == 0 {
			// Every being of this member has stopped, children first.
			stopped := p.live.shutdown(m.sigs)
			return false, failure(stopped)
		}
		select {
		case <-tick.C:
			p.look()
		case <-wake:
			p.look()
		case ev := <-p.live.events:
			switch ev := ev.(type) {
			case messages.SubtreeStopping:
				p.stopChildren(ev)
			case messages.BeingReleased:
				if p.released(ev) {
					p.stopFamily("the family has ended: its root is exhausted; every being stops, children before parents")
				}
			case messages.FamilyStopped:
				p.live.close()
				p.unlockAll()
				return false, ev.Err
			}
		case err := <-p.lost:
			m.log.Error("a step was refused: this member's beings stop at once and write nothing more", "err", err)
			p.live.stopNow()
			return true, nil
		case <-m.session.Done():
			m.log.Error("the member's etcd lease ended: its beings stop at once and write nothing more")
			p.live.stopNow()
			return true, nil
		case <-p.hurry:
			m.log.Warn("this member's beings did not stop children first within the shutdown grace: the rest stop now")
			p.hurry = nil
			p.releaseAll()
		case <-m.sigs:
			if !p.stopping && !p.leaving {
				p.leave()
				continue
			}
			m.log.Info("second signal received: this member's beings stop at their next round boundary without waiting for one another")
			stopped := p.live.shutdown(m.sigs)
			p.unlockAll()
			return false, failure(stopped)
		}
	}
}

// failure is the error a stopped family ends the member with.
func failure(stopped messages.FamilyStopped) error {
	if stopped.Status == state.StatusFailed && stopped.Err != nil {
		return stopped.Err
	}
	return nil
}

// leave hands this member's beings over: each stops at its next round
// boundary once none of its children runs on a member that leaves, this
// one included, and the members that stay take it. When every member
// leaves, nobody takes any, and the whole family stops children before
// parents. A mark that cannot be written leaves the other members
// counting this one: they take its beings once it has gone.
func (p *placer) leave() {
	p.leaving = true
	ctx, cancel := context.WithTimeout(context.Background(), p.m.cl.Lease)
	err := member.MarkLeaving(ctx, p.m.session)
	cancel()
	if err != nil {
		p.m.log.Warn("the other members cannot be told that this one leaves", "err", err)
	}
	p.m.log.Info("signal received: this member's beings stop at their next round boundary, children before parents, and are handed over")
	p.hurry = time.After(2*p.live.grace + stopLimit)
	p.look()
}

// releaseAll asks every being of this member that is not stopping yet
// to stop at its next round boundary.
func (p *placer) releaseAll() {
	for _, b := range p.mine {
		if !b.releasing {
			b.releasing = true
			p.live.system.Root.Send(p.live.family, family.Release{Dir: b.dir})
		}
	}
}

// stopFamily stops this member's beings for good, children before
// parents (stopInOrder at every look), taking none.
func (p *placer) stopFamily(why string) {
	if p.stopping {
		return
	}
	p.stopping = true
	p.m.log.Info(why)
	p.look()
}

// stopInOrder asks each of this member's beings to stop once none of
// its children runs, on this member or another: the leaves first, then
// their parents as their children's locks are let go, across members.
// A member that leaves while the family lives waits only for children
// on members that leave: those on members that stay go on running.
func (p *placer) stopInOrder(pl member.Placement) {
	running := map[string]bool{}
	for child, parent := range pl.Registered {
		if p.mine[child] != nil || pl.LeavingHeld[child] || (p.stopping && pl.Locked[child]) {
			running[parent] = true
		}
	}
	for _, b := range p.mine {
		if b.releasing || running[b.id] {
			continue
		}
		b.releasing = true
		p.live.system.Root.Send(p.live.family, family.Release{Dir: b.dir})
	}
}

// stopChildren records that the being of ev stops for good, so that
// its children, wherever they run, stop for good first; subtrees tells
// it once they have.
func (p *placer) stopChildren(ev messages.SubtreeStopping) {
	b := p.byDir(ev.Dir)
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.m.cl.Lease)
	err := b.lock.StopChildren(ctx)
	cancel()
	if err != nil {
		// The being's lock is gone, or etcd did not answer: its steps
		// are refused from now on, and its next holder stops it again.
		p.m.log.Warn("a being's children could not be asked to stop", "being", b.id, "err", err)
		return
	}
	b.awaitingChildren = true
	p.look()
}

// subtrees carries stops for good down and answers them up: a being of
// this member whose parent stops for good stops for good itself, and a
// being that waits for its children goes on once every one has ended.
func (p *placer) subtrees(pl member.Placement) {
	for _, b := range p.mine {
		if b.awaitingChildren && pl.ChildrenEnded(b.id) {
			b.awaitingChildren = false
			p.live.system.Root.Send(p.live.family, family.SubtreeDone{Dir: b.dir})
		}
		if b.releasing || b.forGood || !pl.Stopping[pl.Registered[b.id]] {
			continue
		}
		b.releasing, b.forGood = true, true
		p.m.log.Info("a being stops for good with its parent", "being", b.id)
		p.live.system.Root.Send(p.live.family, family.Release{Dir: b.dir, ForGood: true})
	}
}

// byDir is the being of this member living in dir, nil if none.
func (p *placer) byDir(dir string) *placedBeing {
	for _, b := range p.mine {
		if b.dir == filepath.Clean(dir) {
			return b
		}
	}
	return nil
}

// look reads the placement, takes free beings up to this member's share
// and gives back what it holds beyond it; once the family stops, it
// stops this member's beings in order instead. A look that etcd does not
// answer is skipped: the next one comes within a third of the lease.
func (p *placer) look() {
	m := p.m
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	pl, err := member.Look(ctx, m.session)
	cancel()
	if err != nil {
		m.log.Warn("the family's placement could not be read", "err", err)
		return
	}
	p.subtrees(pl)
	if pl.FamilyEnded && !p.stopping {
		p.stopping = true
		m.log.Info("the family has ended: every being stops, children before parents")
	}
	if p.stopping || p.leaving {
		p.stopInOrder(pl)
		return
	}
	mine := make(map[string]bool, len(p.mine))
	releasing := 0
	for id, b := range p.mine {
		mine[id] = true
		if b.releasing {
			releasing++
		}
	}
	p.takeLimiter(pl)
	take, give := pl.Plan(mine, releasing)
	for range give {
		p.giveBack()
	}
	now := time.Now()
	take = slices.DeleteFunc(take, func(id string) bool { return !p.retries.Ready(id, now) })
	// Members race for the same free beings: each tries them in its own
	// order, so that they rarely meet on one lock.
	rand.Shuffle(len(take), func(i, j int) { take[i], take[j] = take[j], take[i] })
	for _, t := range p.tryLocks(pl, take) {
		p.activate(t.id, t.lock, t.dir)
	}
}

// taken is a being whose lock a look took.
type taken struct {
	id, dir string
	lock    *fence.Lock
}

// lockBatches bounds how many lock transactions (fence.TryLockAll, each
// of up to fence.MaxTryAll locks) a look has in flight at once.
const lockBatches = 4

// tryLocks tries the locks of take, fence.MaxTryAll in one transaction,
// and returns those it got, in take's order.
func (p *placer) tryLocks(pl member.Placement, take []string) []taken {
	m := p.m
	dirs := map[string]string{}
	var ids []string
	for _, id := range take {
		dir, err := member.Dir(m.rt.StateDir, pl.Registered, id)
		if err != nil {
			m.log.Warn("a registered being cannot be placed", "being", id, "err", err)
			continue
		}
		dirs[id] = dir
		ids = append(ids, id)
	}
	var (
		mu  sync.Mutex
		got = map[string]*fence.Lock{}
		wg  sync.WaitGroup
	)
	slots := make(chan struct{}, lockBatches)
	for batch := range slices.Chunk(ids, fence.MaxTryAll) {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
			defer cancel()
			locks, err := m.session.TryLockAll(ctx, batch)
			if err != nil {
				m.log.Warn("beings' locks could not be tried", "beings", len(batch), "err", err)
				return
			}
			mu.Lock()
			maps.Copy(got, locks)
			mu.Unlock()
		}()
	}
	wg.Wait()
	var out []taken
	for _, id := range ids {
		if lock := got[id]; lock != nil {
			out = append(out, taken{id: id, dir: dirs[id], lock: lock})
		}
	}
	return out
}

// activate starts the being id living in dir under lock.
func (p *placer) activate(id string, lock *fence.Lock, dir string) {
	m := p.m
	hold := member.NewHolding(m.session, lock, p.batch, m.rt.StateDir, m.cl.Lease)
	b := &placedBeing{id: id, dir: filepath.Clean(dir), lock: lock, hold: hold, gone: make(chan struct{})}
	p.mine[id] = b
	msg := family.Activate{Dir: b.dir, Holding: hold}
	if id != member.RootBeing {
		// The child's first state.json names it (its identity never
		// changes).
		st, err := state.Load(dir)
		if err != nil {
			wait := p.retries.Failed(id, time.Now())
			m.log.Warn("a being cannot be activated; this member tries it again no sooner than after a wait", "being", id, "wait", wait, "err", err)
			delete(p.mine, id)
			p.unlock(b)
			return
		}
		msg.Name, msg.Ticker, msg.Specialty = st.Identity.Name, st.Identity.Ticker, st.Identity.Specialty
	}
	go func() {
		select {
		case <-hold.Lost():
			select {
			case p.lost <- hold.Err():
			default:
			}
		case <-b.gone:
		}
	}()
	m.log.Info("this member holds a being", "being", id, "token", lock.Token())
	p.live.system.Root.Send(p.live.family, msg)
}

// giveBack asks one being beyond the share (the root last) to stop at
// its next round boundary; its lock is let go once it has.
func (p *placer) giveBack() {
	var pick *placedBeing
	for _, b := range p.mine {
		if b.releasing || (pick != nil && b.id == member.RootBeing) {
			continue
		}
		if pick == nil || pick.id == member.RootBeing || b.id > pick.id {
			pick = b
		}
	}
	if pick == nil {
		return
	}
	pick.releasing = true
	p.m.log.Info("this member gives a being back", "being", pick.id)
	p.live.system.Root.Send(p.live.family, family.Release{Dir: pick.dir})
}

// released lets go of a being whose actor ended, recording its end
// first when it will not cycle again. It reports whether the family
// ended: the root is exhausted.
func (p *placer) released(ev messages.BeingReleased) (familyEnded bool) {
	m := p.m
	b := p.byDir(ev.Dir)
	if b == nil {
		return false
	}
	delete(p.mine, b.id)
	defer p.unlock(b)
	if b.hold.Err() != nil {
		return false
	}
	// A being that ended by itself (exhausted, or loaded as ended), or
	// stopped for good with its parent, is recorded, so no member takes
	// it again. One that failed here is let go: another member tries
	// it, and one whose failure is durable loads as ended there. Only
	// the root's exhaustion ends the family: a root that failed is
	// tried by another member, as a family held as one unit is.
	ended := ev.Status == state.StatusExhausted || (ev.Status == state.StatusFailed && ev.Err == nil) ||
		(b.forGood && ev.Err == nil)
	if b.id == member.RootBeing {
		ended = ev.Status == state.StatusExhausted
	}
	if !ended {
		if ev.Err != nil {
			wait := p.retries.Failed(b.id, time.Now())
			m.log.Warn("a being failed on this member; it is let go, and this member takes it again no sooner than after a wait",
				"being", b.id, "wait", wait, "err", ev.Err)
		} else {
			p.retries.Stopped(b.id)
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	defer cancel()
	if b.id == member.RootBeing {
		if err := b.hold.End(ctx, ev.Status); err != nil {
			m.log.Warn("the family's end could not be recorded", "err", err)
			return false
		}
		return true
	}
	if err := b.lock.End(ctx, ev.Status); err != nil {
		m.log.Warn("a being's end could not be recorded", "being", b.id, "err", err)
	}
	m.log.Info("a being has ended", "being", b.id, "status", ev.Status)
	return false
}

func (p *placer) unlockAll() {
	for id, b := range p.mine {
		delete(p.mine, id)
		p.unlock(b)
	}
}

// unlock lets b go.
func (p *placer) unlock(b *placedBeing) {
	close(b.gone)
	unlockLock(p.m, b.lock)
}

// unlockLock lets a being's lock go; one that etcd does not let go goes
// with the member's lease.
func unlockLock(m *memberRun, l *fence.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	defer cancel()
	if err := l.Unlock(ctx); err != nil {
		m.log.Warn("a being's lock could not be let go; it goes with the lease", "being", l.Being(), "err", err)
	}
}

// watchPlacement wakes the placer when a lock, a registration, a member,
// a member's leaving or the family's end changes; its stop ends the watches.
func watchPlacement(s *fence.Session) (<-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	wake := make(chan struct{}, 1)
	for _, key := range []string{"lock/", "being/", "member/", "ended", "stop/", "leaving/"} {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if key == "lock/" {
			// A lock let go frees a being; one taken frees none.
			opts = append(opts, clientv3.WithFilterPut())
		}
		ch := s.Client().Watch(ctx, s.Prefix()+key, opts...)
		go func() {
			for range ch {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	return wake, cancel
}
