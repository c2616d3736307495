package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/limits"
	"github.com/wisent/singularity/actors/placer"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// placementOf is the member record's placement for cl.
func placementOf(cl config.Cluster) string {
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
	status, ended, err := m.session.FamilyEnded(ctx)
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
	rootOpts, err := rootOptions(m.rt, being.Run, m.e.log)
	if err != nil {
		unlockRoot(m, rootLock)
		return false, err
	}
	lim := &limiter{m: m}
	by := held{member: m.cl.Member, placed: true, committed: member.CommittedOf(m.session, m.rt.StateDir), show: m.show.spreadOver(m.session),
		relay: memberRelay(m.rt.StateDir, m.cl.Member, endedIn(m.session, m.rt.StateDir))}
	if lim.limited() {
		by.limiter = limits.ProxyProps(m.show.system, limiterLocator(m.session), 0)
		defer lim.drop()
	}
	batch := fence.NewBatcher(m.session)
	defer batch.Close()
	done := make(chan placer.Outcome, 1)
	cfg := placer.Config{
		Store: fence.NewPlacements(m.session),
		Root:  m.rt.StateDir,
		Lease: m.cl.Lease,
		Hold: func(l placement.Lock) placer.Hold {
			// The store is fence's: its locks are fence's.
			return member.NewSpreadHolding(m.session, l.(*fence.Lock), batch, m.rt.StateDir, m.cl.Lease)
		},
		Identity:  childIdentity,
		AfterLook: lim.take,
		RetryMost: retryMost,
		StopGrace: 2*m.rt.ShutdownGrace + stopLimit,
		Done:      done,
		Logger:    m.log,
	}
	var placerPID *actor.PID
	by.listener = func(system *actor.ActorSystem) (*actor.PID, error) {
		pid, err := system.Root.SpawnNamed(placer.Props(cfg), "placer")
		placerPID = pid
		return pid, err
	}
	l, err := startFamilyWith(m.e, m.rt, rootOpts, by)
	if err != nil {
		unlockRoot(m, rootLock)
		return false, err
	}
	defer m.show.standBy(m.session)
	begin := placer.Begin{Family: l.family}
	if rootLock != nil {
		begin.Root = rootLock
	}
	l.system.Root.Send(placerPID, begin)
	m.log.Info("this member places the family's beings", "placement", "being")
	defer m.serveControl(l, true)()
	defer keepHistoryShort(m.session, m.cl.Compact, m.log)()
	return m.placeUntilDone(l, placerPID, done)
}

// unlockRoot lets go of the root's lock a member took to write the
// root's first state, if it took it.
func unlockRoot(m *memberRun, l *fence.Lock) {
	if l != nil {
		unlockLock(m, l)
	}
}

// placeUntilDone waits for the placer's outcome. A first signal makes the
// member leave (its beings stop children first and are handed over), a
// second one stops its beings without waiting for one another, and a
// third, or the stop deadline, at once; if even that does not finish
// within stopLimit, the member gives up with an error rather than hang.
// A lost lease stops the family at once, writing nothing more.
func (m *memberRun) placeUntilDone(l *live, placerPID *actor.PID, done <-chan placer.Outcome) (rejoin bool, err error) {
	var hurry, giveUp <-chan time.Time
	signals := 0
	// The placer's watch and its holds' watchers end with it, before
	// the family's actor system shuts down (within the future's 10 s).
	stopPlacer := func() { _ = l.system.Root.StopFuture(placerPID).Wait() }
	for {
		select {
		case out := <-done:
			if out.Rejoin {
				l.system.Root.Stop(l.family) // at once: nothing more is written
				stopPlacer()
				l.close()
				return true, nil
			}
			stopPlacer()
			l.close()
			m.summarize(false, out.Held, nil)
			return false, out.Err
		case <-m.session.Done():
			m.log.Error("the member's etcd lease ended: its beings stop at once and write nothing more")
			l.system.Root.Stop(l.family)
			stopPlacer()
			l.close()
			return true, nil
		case <-m.sigs:
			signals++
			switch signals {
			case 1:
				m.log.Info("signal received: this member's beings stop at their next round boundary, children before parents, and are handed over")
				l.system.Root.Send(placerPID, placer.Leave{})
				hurry = time.After(2*l.grace + 2*stopLimit)
			case 2:
				m.log.Info("second signal received: this member's beings stop at their next round boundary without waiting for one another")
				l.system.Root.Send(placerPID, placer.Shutdown{})
			default:
				m.log.Warn("another signal: stopping without waiting")
				l.system.Root.Send(placerPID, placer.Shutdown{Now: true})
				if giveUp == nil {
					giveUp = time.After(stopLimit)
				}
			}
		case <-hurry:
			hurry = nil
			m.log.Warn("this member's beings did not stop within the shutdown grace: stopping without waiting")
			l.system.Root.Send(placerPID, placer.Shutdown{Now: true})
			giveUp = time.After(stopLimit)
		case <-giveUp:
			l.system.Root.Stop(l.family)
			stopPlacer()
			l.close()
			return false, fault.New(fault.ClassRuntime, "the family did not stop in time")
		}
	}
}

// childIdentity reads a child's name, ticker and specialty from its
// first state.json (a child's identity never changes).
func childIdentity(dir string) (name, ticker, specialty string, err error) {
	st, err := state.Load(dir)
	if err != nil {
		return "", "", "", err
	}
	return st.Identity.Name, st.Identity.Ticker, st.Identity.Specialty, nil
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
				return freshRoot(m.rt), nil
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

// limiterLock is the lock of the family's one spend limiter
// (docs/cluster.md#beings-spread-over-members), taken like a being's.
const limiterLock = "limiter"

// limiter runs the family's one spend limiter on this member while it
// holds the limiter's lock. take runs after every look of the placer,
// on the look's worker: one at a time.
type limiter struct {
	m    *memberRun
	mu   sync.Mutex
	pid  *actor.PID
	lock *fence.Lock
}

// limited says whether the family has spend limits, and so a limiter.
func (lim *limiter) limited() bool {
	return lim.m.rt.SpendLimit != nil || lim.m.rt.FamilySpendLimit != nil
}

// take runs the family's limiter here when no member holds its lock.
// Its window starts empty, as a family's that restarts does.
func (lim *limiter) take(pl placement.Placement) {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	m := lim.m
	if !lim.limited() || lim.lock != nil || pl.Locked[limiterLock] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	lock, err := m.session.TryLock(ctx, limiterLock)
	cancel()
	if err != nil {
		return
	}
	pid, err := m.show.system.Root.SpawnNamed(limits.Props(m.rt.FamilySpendLimit, nil), limits.Name)
	if err != nil {
		m.log.Warn("the family's spend limiter cannot be started here", "err", err)
		unlockLock(m, lock)
		return
	}
	lim.pid, lim.lock = pid, lock
	m.log.Info("this member runs the family's spend limiter", "token", lock.Token())
}

// drop stops the limiter this member runs and lets its lock go.
func (lim *limiter) drop() {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.pid == nil {
		return
	}
	_ = lim.m.show.system.Root.StopFuture(lim.pid).Wait()
	unlockLock(lim.m, lim.lock)
	lim.pid, lim.lock = nil, nil
}

// limiterLocator finds the member that runs the family's limiter,
// asking etcd at most once a second.
func limiterLocator(session *fence.Session) limits.Locate {
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
		info, ok, err := member.Holder(ctx, session, limiterLock)
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

// unlockLock lets a being's lock go; one that etcd does not let go goes
// with the member's lease.
func unlockLock(m *memberRun, l *fence.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	defer cancel()
	if err := l.Unlock(ctx); err != nil {
		m.log.Warn("a being's lock could not be let go; it goes with the lease", "being", l.Being(), "err", err)
	}
}
