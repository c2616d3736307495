package membership

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/limits"
	"github.com/wisent/singularity/actors/placer"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// The messages of a membership that runs beings.
type (
	// rootReady: the root's first state exists (lock, when set, is the
	// root's lock this member took to write it), or the wait goes on
	// (retry).
	rootReady struct {
		lock  *fence.Lock
		retry bool
		err   error
	}
	awaitAgain struct{}
	placerDone struct{ out placer.Outcome }
)

// startWhole starts the whole family under the root's lock: its first
// state written if it has none, every being fenced by the lock.
func (m *Membership) startWhole() {
	s, lock, fams, root, lease := m.session, m.lock, m.cfg.Families, m.cfg.Root, m.cfg.Lease
	listen := m.relay()
	m.call(0, func(context.Context) any {
		if err := fams.FreshRoot(); err != nil {
			return started{err: err}
		}
		batch := fence.NewBatcher(s)
		hold := member.NewHolding(s, lock, batch, root, lease)
		fam, err := fams.Whole(s, hold, lock.Token(), listen)
		if err != nil {
			batch.Close()
			return started{err: err}
		}
		return started{hold: hold, batch: batch, fam: fam}
	})
}

// relay is the whole family's listener: an actor on the family's actor
// system that tells the membership the family's last word.
func (m *Membership) relay() Listener {
	gen, self, system := m.gen, m.self, m.system
	return func(on *actor.ActorSystem) (*actor.PID, error) {
		return on.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
			if msg, ok := ctx.Message().(messages.FamilyStopped); ok {
				system.Root.Send(self, answer{gen: gen, msg: msg})
			}
		}), "membership")
	}
}

// awaitRoot waits until the root's first state exists. The member that
// takes the root's lock while it does not writes it, and keeps the
// lock: it runs the root first.
func (m *Membership) awaitRoot() {
	s, root, fams, lease, log := m.session, m.cfg.Root, m.cfg.Families, m.cfg.Lease, m.log
	m.call(0, func(context.Context) any {
		exists, err := state.Exists(root)
		switch {
		case err != nil:
			return rootReady{err: err}
		case exists:
			return rootReady{}
		}
		ctx, cancel := context.WithTimeout(context.Background(), lease)
		lock, err := s.TryLock(ctx, member.RootBeing)
		cancel()
		switch {
		case err == nil:
			if err := fams.FreshRoot(); err != nil {
				unlock(lock, lease, log)
				return rootReady{err: err}
			}
			return rootReady{lock: lock}
		case !errors.Is(err, fence.ErrLocked):
			log.Warn("the root's lock could not be tried", "err", err)
		}
		return rootReady{retry: true}
	})
}

func (m *Membership) handleRootReady(msg rootReady) {
	m.inFlight = false
	switch {
	case msg.err != nil:
		m.finish(ending{err: msg.err})
	case !msg.retry:
		m.lock = msg.lock
		m.enter(Placing)
		m.startSpread()
	case m.pending > 0:
		m.log.Info("signal received while waiting for the root's first state: leaving")
		m.finish(ending{})
	case m.lost():
		m.finish(ending{rejoin: true})
	default:
		m.after(m.cfg.Lease/4, awaitAgain{})
	}
}

// startSpread starts this member's share of a spread family: the
// family actor with no being, its placer as its listener, and the
// family's spend limiter when it has limits.
func (m *Membership) startSpread() {
	s, fams, cfg := m.session, m.cfg.Families, m.cfg
	gen, self, system, log := m.gen, m.self, m.system, m.log
	var (
		lim      *limiter
		limProps *actor.Props
	)
	if cfg.SpendLimited {
		lim = &limiter{session: s, system: system, limit: cfg.FamilySpendLimit, lease: cfg.Lease, log: log}
		limProps = limits.ProxyProps(system, limiterLocator(s), 0)
	}
	m.call(0, func(context.Context) any {
		batch := fence.NewBatcher(s)
		pcfg := placer.Config{
			Store: fence.NewPlacements(s),
			Root:  cfg.Root,
			Lease: cfg.Lease,
			Hold: func(l placement.Lock) placer.Hold {
				// The store is fence's: its locks are fence's.
				return member.NewSpreadHolding(s, l.(*fence.Lock), batch, cfg.Root, cfg.Lease)
			},
			Identity:  childIdentity,
			RetryMost: cfg.RetryMost,
			StopGrace: 2*cfg.Grace + cfg.StopLimit,
			Done:      func(out placer.Outcome) { system.Root.Send(self, answer{gen: gen, msg: placerDone{out: out}}) },
			Logger:    log,
		}
		if lim != nil {
			pcfg.AfterLook = lim.take
		}
		var pid *actor.PID
		listen := func(on *actor.ActorSystem) (*actor.PID, error) {
			p, err := on.Root.SpawnNamed(placer.Props(pcfg), "placer")
			pid = p
			return p, err
		}
		fam, err := fams.Spread(s, listen, limProps)
		if err != nil {
			batch.Close()
			return started{err: err}
		}
		return started{batch: batch, fam: fam, placer: pid, lim: lim}
	})
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

func (m *Membership) handleStarted(msg started) {
	m.inFlight = false
	if msg.err != nil {
		m.finish(ending{err: msg.err})
		return
	}
	m.fam, m.hold, m.batch, m.placer, m.limiter = &msg.fam, msg.hold, msg.batch, msg.placer, msg.lim
	if m.cfg.Spread {
		begin := placer.Begin{Family: m.fam.PID}
		if m.lock != nil {
			begin.Root = m.lock
			m.lockHanded = true
		}
		m.fam.System.Root.Send(m.placer, begin)
		m.log.Info("this member places the family's beings", "placement", "being")
	} else {
		m.log.Info("this member holds the family")
		m.stopLost = make(chan struct{})
		lost, stop := m.hold.Lost(), m.stopLost
		gen, self, system := m.gen, m.self, m.system
		go func() {
			select {
			case <-lost:
				system.Root.Send(self, answer{gen: gen, msg: holdLost{}})
			case <-stop:
			}
		}()
	}
	m.stopHistory = keepHistoryShort(m.session, m.cfg.Compact, m.log)
	if m.lost() {
		m.handleSessionEnded()
		return
	}
	for ; m.pending > 0; m.pending-- {
		m.handleSignal()
	}
}

// escalate asks the beings what the nth signal asks of them.
func (m *Membership) escalate(step member.SignalStep, n int) {
	switch {
	case !m.cfg.Spread && n == 1:
		m.log.Info("signal received: the family stops at its next round boundary and is handed over")
	case !m.cfg.Spread:
		m.log.Warn("second signal: stopping without waiting")
	case n == 1:
		m.log.Info("signal received: this member's beings stop at their next round boundary, children before parents, and are handed over")
	case n == 2:
		m.log.Info("second signal received: this member's beings stop at their next round boundary without waiting for one another")
	default:
		m.log.Warn("another signal: stopping without waiting")
	}
	m.asked = true
	m.ask(step.Ask)
	if step.Hurry && m.stopHurry == nil {
		grace := 2*m.cfg.Grace + m.cfg.StopLimit
		if m.cfg.Spread {
			grace += m.cfg.StopLimit
		}
		m.stopHurry = m.after(grace, hurry{})
	}
	if step.GiveUp && m.stopGiveUp == nil {
		m.stopGiveUp = m.after(m.cfg.StopLimit, giveUp{})
	}
}

// ask tells the beings to stop as a asks: the whole family through its
// family actor, a spread share through its placer.
func (m *Membership) ask(a member.Ask) {
	root, fam := m.fam.System.Root, m.fam.PID
	switch {
	case m.cfg.Spread && a == member.AskHandOver:
		root.Send(m.placer, placer.Leave{})
	case m.cfg.Spread:
		root.Send(m.placer, placer.Shutdown{Now: a == member.AskNow})
	default:
		root.Send(fam, messages.ShutdownFamily{Now: a == member.AskNow})
	}
}

func (m *Membership) handleHurry() {
	if m.fam == nil || m.phase == Stopping {
		return
	}
	if m.cfg.Spread {
		m.log.Warn("this member's beings did not stop within the shutdown grace: stopping without waiting")
	} else {
		m.log.Warn("the family did not stop within its shutdown grace: stopping without waiting")
	}
	step, rearm := member.Hurried(m.cfg.Spread)
	m.ask(step.Ask)
	if rearm && m.stopGiveUp != nil {
		m.stopGiveUp()
		m.stopGiveUp = nil
	}
	if m.stopGiveUp == nil {
		m.stopGiveUp = m.after(m.cfg.StopLimit, giveUp{})
	}
}

// handleGiveUp ends a family that did not stop in time.
func (m *Membership) handleGiveUp() {
	if m.fam == nil || m.phase == Stopping {
		return
	}
	err := fault.New(fault.ClassRuntime, "the family did not stop in time")
	if m.cfg.Spread {
		m.finish(ending{stopFamily: true, err: err})
		return
	}
	m.handleFamilyStopped(messages.FamilyStopped{Status: state.StatusFailed, Err: err})
}

// handleFamilyStopped acts on the whole family's last word
// (member.AfterStop).
func (m *Membership) handleFamilyStopped(msg messages.FamilyStopped) {
	if m.fam == nil || m.phase != Holding {
		return
	}
	v := member.AfterStop(m.asked, m.hold.Err(), msg.Status, msg.Err)
	if v.Rejoin {
		m.log.Error("the family stopped: a step was refused; it writes nothing more", "err", m.hold.Err())
	}
	e := ending{rejoin: v.Rejoin, err: v.Err, summarize: v.Summarize, root: &msg}
	if v.EndFamily {
		e.endFamily = msg.Status
	}
	m.finish(e)
}

// handleHoldLost stops the whole family at once when one of its steps
// was refused: it writes nothing more, and the member joins anew.
func (m *Membership) handleHoldLost() {
	if m.fam == nil || m.phase != Holding || m.asked {
		return
	}
	m.log.Error("a step was refused: the family stops at once and writes nothing more", "err", m.hold.Err())
	m.finish(ending{rejoin: true, stopFamily: true})
}

// handlePlacerDone acts on the placer's outcome.
func (m *Membership) handlePlacerDone(msg placerDone) {
	if m.fam == nil || m.phase != Placing {
		return
	}
	if msg.out.Rejoin {
		m.finish(ending{rejoin: true, stopFamily: true}) // at once: nothing more is written
		return
	}
	m.finish(ending{summarize: true, dirs: msg.out.Held, err: msg.out.Err})
}
