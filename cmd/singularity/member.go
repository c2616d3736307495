package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/memberlink"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// runMember is `run` as a member of a family across processes
// (docs/cluster.md#members). The member joins the family in etcd, then
// stands by for the root being's lock; the member that holds it runs the
// whole family, every being fenced by that lock. It ends at a signal
// (handing the family over at the beings' next round boundary), when the
// family ended (its root exhausted), or when the family failed on this
// member (the lock goes to a standby, which tries it). A member whose
// lease is lost, or one of whose beings' steps was refused, stops the
// family at once, writing nothing more, and joins again once etcd
// answers.
func runMember(e *env, rt config.Runtime, cl config.Cluster) error {
	sigs, stop := notifySignals()
	defer stop()
	session, err := openSession(cl)
	if err != nil {
		return fault.Errorf(fault.ClassCluster, "etcd is unreachable at boot: %w", err)
	}
	log := e.log.With("member", cl.Member)
	show, address, closeShow, err := openShowcase(e, rt, cl)
	if err != nil {
		_ = session.Close()
		return err
	}
	defer closeShow()
	cl.Bind = address
	for {
		m := &memberRun{e: e, rt: rt, cl: cl, log: log, session: session, sigs: sigs, show: show}
		rejoin, err := m.live()
		if !rejoin {
			return err
		}
		if session = reopen(cl, log, sigs); session == nil {
			return nil // a signal while etcd was away
		}
	}
}

// openShowcase starts what the member shows for its whole life: its own
// actor system, served by protoactor-go's remote at --cluster-bind with
// the member's link on it, and its debug endpoint when one is
// configured. It returns the address the link listens on (the bound
// port, if --cluster-bind asked for port 0), which the member record
// carries.
func openShowcase(e *env, rt config.Runtime, cl config.Cluster) (*showcase, string, func(), error) {
	quiet := logging.AtLeast(e.log.With("lib", "protoactor"), slog.LevelWarn)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	show := newShowcase(cl.Member, cl.Family, rt.StateDir, system)
	address, stopRemote, err := memberlink.Serve(system, cl.Bind, show.answer, show.relay)
	if err != nil {
		system.Shutdown()
		return nil, "", nil, fault.Errorf(fault.ClassCluster, "%w", err)
	}
	closeAll := func() {
		stopRemote()
		system.Shutdown()
	}
	if rt.DebugAddr == "" {
		return show, address, closeAll, nil
	}
	dbg := debug.NewServer(debug.ServerConfig{Addr: rt.DebugAddr, AllowRemote: rt.DebugAllowRemote})
	if err := dbg.Serve(show); err != nil {
		closeAll()
		return nil, "", nil, err
	}
	e.log.Info("debug endpoint listening", "url", "http://"+dbg.Addr().String()+"/debug/")
	return show, address, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = dbg.Shutdown(ctx)
		cancel()
		closeAll()
	}, nil
}

func openSession(cl config.Cluster) (*fence.Session, error) {
	return fence.Open(fence.Config{Endpoints: cl.Endpoints, Family: cl.Family, TTL: cl.Lease})
}

// reopen opens a new session once etcd answers again; nil after a
// signal.
func reopen(cl config.Cluster, log *slog.Logger, sigs <-chan os.Signal) *fence.Session {
	for warned := false; ; warned = true {
		s, err := openSession(cl)
		if err == nil {
			log.Info("etcd answers again: joining the family anew")
			return s
		}
		if !warned {
			log.Warn("etcd is unreachable: waiting for it to join the family again", "err", err)
		}
		select {
		case <-sigs:
			return nil
		case <-time.After(time.Second):
		}
	}
}

// memberRun is one membership: a session, from the join to its end.
type memberRun struct {
	e       *env
	rt      config.Runtime
	cl      config.Cluster
	log     *slog.Logger
	session *fence.Session
	sigs    <-chan os.Signal
	member  *member.Member
	show    *showcase
}

// live joins, stands by, and holds the family if its lock comes. It
// closes the session (its lease revoked: every lock let go) before it
// returns; rejoin asks for a new membership.
func (m *memberRun) live() (rejoin bool, err error) {
	defer m.session.Close()
	switch err := m.join(); {
	case errors.Is(err, errSignalled):
		return false, nil
	case err != nil:
		return false, err
	}
	defer m.leave()
	defer m.watchMembers()()
	defer m.listenForOperator()()
	m.show.standBy(m.session)
	defer m.show.standBy(nil)
	if m.cl.Spread {
		return m.spread()
	}
	lock, rejoin, err := m.standBy()
	if lock == nil {
		return rejoin, err
	}
	return m.hold(lock)
}

// watchMembers runs the member's lifeline for the rest of its
// membership (docs/cluster.md#a-dead-members-lease): the lease of a
// member whose process is gone is ended at once, not at the lease's
// end. It returns the lifeline's stop.
func (m *memberRun) watchMembers() func() {
	ctx, cancel := context.WithCancel(context.Background())
	lifeline := member.Lifeline{Session: m.session, Self: m.member.Info().Lease, Every: m.cl.Lease / 3, Log: m.log}
	done := make(chan struct{})
	go func() { defer close(done); lifeline.Run(ctx) }()
	return func() { cancel(); <-done }
}

// join enters the family; a name still taken by this member's previous
// lease (etcd away, then back) is tried again until that lease is over.
func (m *memberRun) join() error {
	deadline := time.Now().Add(2 * m.cl.Lease)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease+fence.DefaultDialTimeout)
		mem, err := member.Join(ctx, m.session, m.cl.Family, member.Config{Name: m.cl.Member, Address: m.cl.Bind, Root: m.rt.StateDir, Placement: placementOf(m.cl)})
		cancel()
		switch {
		case err == nil:
			m.member = mem
			m.log.Info("joined the family", "family", m.cl.Family, "lease", fmt.Sprintf("%x", m.session.Lease()))
			return nil
		case errors.Is(err, member.ErrNameTaken) && time.Now().Before(deadline):
			select {
			case <-m.session.Done():
				return fault.Errorf(fault.ClassCluster, "cannot join the family %s: the member's etcd lease ended", m.cl.Family)
			case <-m.sigs:
				m.log.Info("signal received while joining: leaving")
				return errSignalled
			case <-time.After(m.cl.Lease / 4):
			}
		case errors.Is(err, member.ErrNameTaken), errors.Is(err, member.ErrAnotherRoot),
			errors.Is(err, member.ErrAnotherFamily), errors.Is(err, member.ErrProtocol),
			errors.Is(err, member.ErrPlacement):
			return fault.Errorf(fault.ClassConfiguration, "%w", err)
		default:
			return fault.Errorf(fault.ClassCluster, "cannot join the family %s: %w", m.cl.Family, err)
		}
	}
}

// errSignalled ends a join that a signal interrupted: the member exits 0.
var errSignalled = errors.New("signalled")

// leave deletes the member's record at once (the lease would in time).
func (m *memberRun) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	defer cancel()
	_ = m.member.Leave(ctx)
}

// standBy waits for the root being's lock. A signal ends the wait (and
// the member); a lost lease asks for a new membership.
func (m *memberRun) standBy() (*fence.Lock, bool, error) {
	type taken struct {
		lock *fence.Lock
		err  error
	}
	got := make(chan taken, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		l, err := m.session.Lock(ctx, member.RootBeing)
		got <- taken{l, err}
	}()
	m.log.Info("standing by for the family's lock")
	// giveUp ends the wait and lets go of a lock taken meanwhile. A
	// wait that does not end (etcd's mutex undoes a failed wait with no
	// deadline of its own) ends when the session is closed, right after;
	// whatever it took goes with the session's lease.
	giveUp := func() {
		cancel()
		select {
		case t := <-got:
			if t.lock != nil {
				ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
				defer cancel()
				_ = t.lock.Unlock(ctx)
			}
		case <-time.After(m.cl.Lease):
		}
	}
	select {
	case t := <-got:
		if t.err == nil {
			return t.lock, false, nil
		}
		// The lease ended, or etcd failed the wait: join again once
		// etcd answers.
		m.log.Warn("the wait for the family's lock failed", "err", t.err)
		return nil, true, nil
	case <-m.sigs:
		m.log.Info("signal received: leaving the family while standing by")
		giveUp()
		return nil, false, nil
	case <-m.session.Done():
		m.log.Warn("the member's etcd lease ended while standing by")
		giveUp()
		return nil, true, nil
	}
}

// hold runs the family under lock until a signal (the family stops at
// its beings' next round boundary and the lock goes to a standby), the
// family's own end, or the loss of the hold.
func (m *memberRun) hold(lock *fence.Lock) (rejoin bool, err error) {
	log := m.log.With("token", lock.Token())
	defer m.show.standBy(m.session)
	unlock := func() {
		ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
		defer cancel()
		_ = lock.Unlock(ctx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
	status, ended, err := m.session.FamilyEnded(ctx)
	cancel()
	switch {
	case err != nil:
		unlock()
		return false, fault.Errorf(fault.ClassCluster, "%w", err)
	case ended:
		unlock()
		log.Info("the family has ended: nothing to hold", "status", status)
		return false, nil
	}
	if err := member.Fresh(m.rt.StateDir, m.rt.Identity, func() (*state.Being, error) {
		return freshRoot(m.rt), nil
	}); err != nil {
		unlock()
		return false, err
	}
	batch := fence.NewBatcher(m.session)
	defer batch.Close()
	hold := member.NewHolding(m.session, lock, batch, m.rt.StateDir, m.cl.Lease)
	rootOpts, err := rootOptions(m.rt, being.Run, m.e.log)
	if err != nil {
		unlock()
		return false, err
	}
	rootOpts.Placement = hold
	l, err := startFamilyWith(m.e, m.rt, rootOpts, held{member: m.cl.Member, token: lock.Token(), committed: hold.Committed, show: m.show.hold})
	if err != nil {
		unlock()
		return false, err
	}
	log.Info("this member holds the family")
	defer m.serveControl(l, false)()
	defer keepHistoryShort(m.session, m.cl.Compact, log)()
	for {
		select {
		case ev := <-l.events:
			msg, ok := ev.(messages.FamilyStopped)
			if !ok {
				continue
			}
			l.close()
			if hold.Err() != nil {
				log.Error("the family stopped: a step was refused; it writes nothing more", "err", hold.Err())
				return true, nil
			}
			m.summarize(true, nil, &msg)
			if msg.Status != state.StatusExhausted {
				// A failure may be this member's own (its gateway, its
				// Las): the lock goes, and a standby tries the family.
				unlock()
				if msg.Err != nil {
					return false, msg.Err
				}
				return false, nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
			err := hold.End(ctx, msg.Status)
			cancel()
			unlock()
			if err != nil {
				return false, fault.Errorf(fault.ClassCluster, "%w", err)
			}
			log.Info("the family has ended: its root is exhausted")
			return false, nil
		case <-m.sigs:
			log.Info("signal received: the family stops at its next round boundary and is handed over")
			stopped := l.shutdown(m.sigs)
			if hold.Err() == nil {
				m.summarize(true, nil, &stopped)
			}
			unlock()
			if hold.Err() == nil && stopped.Status == state.StatusFailed && stopped.Err != nil {
				return false, stopped.Err
			}
			return false, nil
		case <-hold.Lost():
			log.Error("a step was refused: the family stops at once and writes nothing more", "err", hold.Err())
			l.stopNow()
			return true, nil
		case <-m.session.Done():
			log.Error("the member's etcd lease ended: the family stops at once and writes nothing more")
			l.stopNow()
			return true, nil
		}
	}
}

// serveControl carries control requests to the family this member
// holds (placed: its share of a family spread over members) until the
// function it returns is called: those other members relay through its
// link, and those the member's control socket takes (listenForOperator).
// The stop cancels the requests in progress (they answer busy).
func (m *memberRun) serveControl(l *live, placed bool) (stop func()) {
	r := memberRouter(l, m.rt.StateDir, placed, m.e.secrets, m.session, m.cl.Lease)
	membership, cancel := context.WithCancel(context.Background())
	var handle control.Handler = func(ctx context.Context, req control.Request) control.Reply {
		ctx, end := context.WithCancel(ctx)
		defer end()
		defer context.AfterFunc(membership, end)()
		return r.handle(ctx, req)
	}
	m.show.relayed.Store(&handle)
	return func() {
		m.show.relayed.Store(nil)
		cancel()
	}
}

// listenForOperator opens the member's control socket in the shared
// state root for the rest of its membership (docs/cluster.md#the-operators-channel),
// unless --cluster-control-socket is false, and returns its close. A
// request for a being this member holds is carried out here
// (serveControl); any other goes through the link to the member that
// holds the being now (forwardToHolder), so a standby, or a member on
// another machine than the being's, reaches it too.
func (m *memberRun) listenForOperator() (stop func()) {
	if m.cl.NoSocket {
		return func() {}
	}
	handle := func(ctx context.Context, req control.Request) control.Reply {
		if reply := m.show.relay(ctx, req); !reply.NotHere {
			return reply
		}
		return forwardToHolder(ctx, m.session, m.show.system, m.rt.StateDir, m.cl.Member, m.cl.Spread, req)
	}
	ctl, err := listenControl(handle, filepath.Join(m.rt.StateDir, control.MemberSocket(m.cl.Member)))
	if err != nil {
		m.log.Warn("no control socket: fund and say reach this member's beings through another member's socket, or not at all", "err", err)
	}
	return func() {
		if ctl != nil {
			ctl.Close()
		}
	}
}

// keepHistoryShort compacts etcd's history every period while this
// member holds the family (docs/cluster.md#etcds-history), each time up
// to what it saw a period before; it returns the function that stops
// it. A period of 0 never compacts. A compaction that fails is logged
// and tried again at the next period.
func keepHistoryShort(session *fence.Session, every time.Duration, log *slog.Logger) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		history := fence.NewHistory(session)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			tctx, tcancel := context.WithTimeout(ctx, min(every, time.Minute))
			rev, err := history.Tick(tctx)
			tcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("etcd's history was not compacted", "err", err)
			case rev > 0:
				log.Debug("etcd's history compacted", "revision", rev)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// clusterIdentity is the root's identity as its first state.json holds
// it (it never changes), checked against the configuration as a resume
// is.
func clusterIdentity(rt config.Runtime) (state.Identity, error) {
	b, err := state.Load(rt.StateDir)
	if err != nil {
		return state.Identity{}, err
	}
	if b.Identity != rt.Identity.Adopt(b.Identity, rt.IdentityOpen) {
		return state.Identity{}, fault.New(fault.ClassState, "resume identity does not match configuration")
	}
	return b.Identity, nil
}

// summarize ends the member's part of the family with run's summary on
// stderr (docs/cluster.md#the-end-of-a-member), headed "run ended on
// member <name>:", each being read as `singularity status` reads a
// family across processes: by its commit record now in etcd. whole is
// set when the member held the whole family, root its end; otherwise
// dirs are the directories of the beings it held, each a line of its
// own, indented by its depth in the family.
func (m *memberRun) summarize(whole bool, dirs []string, root *messages.FamilyStopped) {
	title := "run ended on member " + m.cl.Member + ":"
	summarizeWithin(m.e, title, summaryWait, func(w io.Writer) {
		say := func(line string) { fmt.Fprintln(w, m.e.secrets.RedactString(line)) }
		ctx, cancel := context.WithTimeout(context.Background(), m.cl.Lease)
		records, err := member.Records(ctx, m.cl.Endpoints, m.cl.Family)
		cancel()
		if err != nil {
			say(title + " the family cannot be read: " + err.Error())
			return
		}
		load := member.Counter(m.rt.StateDir, records)
		var beings []accounts.Being
		if whole {
			fam, err := accounts.ReadWith(m.rt.StateDir, load)
			if err != nil {
				say(title + " the family cannot be read: " + err.Error())
				return
			}
			beings = fam.Beings
		}
		for _, dir := range dirs {
			b, err := accounts.ReadBeing(dir, load)
			if err != nil {
				say(title + " a being it held cannot be read: " + err.Error())
				continue
			}
			b.Depth = depthIn(m.rt.StateDir, dir)
			beings = append(beings, *b)
		}
		if len(beings) == 0 {
			say(title + " it held no being")
			return
		}
		writeEndSummary(w, m.e.secrets, title, beings, root)
	})
}

// depthIn is how deep in the family rooted at root the being living in
// dir is: 0 for the root, 1 for a child (root/children/<id>), and so on.
func depthIn(root, dir string) int {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return 0
	}
	return (strings.Count(filepath.ToSlash(rel), "/") + 1) / 2
}
