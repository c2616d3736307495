// Package membership is the actor that lives one member's life in a
// family across processes (docs/cluster.md#members): it joins the family
// in etcd, stands by for the root's lock (or, with beings spread over
// members, for the root's first state), runs the whole family under that
// lock or its share of a spread family through a placer, and stops: at a
// signal (handing its beings over), at the family's end, or, when its
// lease ends or a step is refused, at once, to join anew once etcd
// answers. Its decisions are internal/member's pure policy. Everything
// slow (etcd, lock waits, starting and closing the family, the end
// summary) runs on a goroutine of its own whose answer comes back as a
// message; signals, the session's end, a hold's loss and the family's
// last word arrive as messages too. The command builds the family
// (Families) and forwards signals; the actor reports its one outcome.
package membership

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// Listener spawns the actor a family tells its news, on the family's
// own actor system.
type Listener func(system *actor.ActorSystem) (*actor.PID, error)

// Family is a running family: its actor system, its family actor, and
// Close, which ends it (its control requests, its debug routes, its
// actor system, its writers) and may take seconds.
type Family struct {
	System *actor.ActorSystem
	PID    *actor.PID
	Close  func()
}

// Families is what the command builds a member's family with. Each
// method but StandBy runs on a worker goroutine, never on the actor's;
// StandBy may run on the actor's, and must not block.
type Families interface {
	// FreshRoot writes the root being's first state unless it exists.
	FreshRoot() error
	// Whole starts the whole family under hold, the root's lock (token
	// its fencing token), telling its news to the actor listen spawns,
	// and carries control requests to it until Close.
	Whole(session *fence.Session, hold *member.Holding, token uint64, listen Listener) (Family, error)
	// Spread starts this member's share of a family spread over its
	// members, with no being yet (the placer listen spawns activates
	// them), its spend limits admitted by limiter when set, and carries
	// control requests to it until Close.
	Spread(session *fence.Session, listen Listener, limiter *actor.Props) (Family, error)
	// Summarize writes the member's end summary, within a bound of its
	// own: the whole family's (root its end), or the beings that lived
	// in dirs.
	Summarize(whole bool, dirs []string, root *messages.FamilyStopped)
	// StandBy shows the member standing by on session, nil once its
	// membership ended. It must not block.
	StandBy(session *fence.Session)
}

// Config configures a membership. Zero durations and a nil Clock or
// Logger take the documented defaults.
type Config struct {
	// Name, Family and Address are the member's name, its family's, and
	// the address of its link, which its member record carries.
	Name, Family, Address string
	// Root is the root being's state directory, the shared root.
	Root string
	// Spread: the family's beings are spread over its members, each
	// under a lock of its own; otherwise one member holds it whole.
	Spread bool
	// Session is the member's first session, opened by the command;
	// Dial opens the next once a lease is lost and etcd answers again.
	Session *fence.Session
	Dial    fence.Config
	// Lease is the member's lease; it bounds each call to etcd. Zero
	// means 3 s.
	Lease time.Duration
	// Compact is how often etcd's history is compacted while the member
	// runs beings; zero never.
	Compact time.Duration
	// Grace is the beings' shutdown grace; StopLimit bounds each stage
	// of a stop beyond it (zero: 30 s). The beings are hurried past
	// twice the grace and a StopLimit (two for a spread share), and the
	// member gives up a StopLimit after that.
	Grace, StopLimit time.Duration
	// SpendLimited: the family has spend limits, so one member runs
	// its limiter (FamilySpendLimit its own limit) for a spread family.
	SpendLimited     bool
	FamilySpendLimit *money.Amount
	// RetryMost bounds the wait before a member takes again a being that
	// kept failing on it; zero means 5 minutes.
	RetryMost time.Duration
	// Families builds the family.
	Families Families
	// Changed, when set, is told each phase the membership enters, on
	// the actor's goroutine: it must not block.
	Changed func(Phase)
	// Ended is told the membership's one outcome: nil to exit 0, or the
	// error the process ends with. It runs on the actor's goroutine.
	Ended  func(error)
	Clock  supervision.Clock
	Logger *slog.Logger
}

// Phase is where a membership is in its life.
type Phase int

const (
	// Joining: entering the family in etcd.
	Joining Phase = iota
	// StandingBy: waiting for the root's lock (a whole family), or for
	// the root's first state (a spread one).
	StandingBy
	// Holding: running the whole family under the root's lock.
	Holding
	// Placing: running this member's share of a spread family.
	Placing
	// Stopping: the membership ends: its beings have stopped or stop at
	// once, its record and its lease go.
	Stopping
	// Reopening: the lease was lost; waiting for etcd to answer again.
	Reopening
	// Ended: the outcome is reported.
	Ended
)

var phaseNames = [...]string{"joining", "standing by", "holding", "placing", "stopping", "reopening", "ended"}

func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("Phase(%d)", int(p))
	}
	return phaseNames[p]
}

// Signal is a signal to the process (SIGINT, SIGTERM), forwarded by the
// command. The first one hands the member's beings over; later ones
// hurry them (member.OnSignal).
type Signal struct{}

// Membership is the actor. See the package comment.
type Membership struct {
	cfg    Config
	log    *slog.Logger
	self   *actor.PID
	system *actor.ActorSystem
	phase  Phase
	// gen numbers the sessions: answers and timers of an earlier one
	// are dropped.
	gen     int
	session *fence.Session
	member  *member.Member
	// lifeline stops the member's lifeline.
	lifeline func()
	// joinBy is when a name still taken is another member's.
	joinBy time.Time
	// inFlight: a worker's answer is awaited before the next step.
	inFlight bool
	// pending counts the signals that came while a worker ran.
	pending int
	// warned: etcd's absence was said once while reopening.
	warned bool

	// standing by: cancelWait ends the wait for the root's lock;
	// givingUp, once it was ended.
	cancelWait func()
	givingUp   bool
	rejoin     bool

	// running beings
	lock        *fence.Lock // the root's: the whole family's, or the one taken to write its first state
	lockHanded  bool        // the placer owns lock
	hold        *member.Holding
	batch       *fence.Batcher
	fam         *Family
	placer      *actor.PID
	limiter     *limiter
	stopHistory func()
	stopLost    chan struct{}
	signals     int
	asked       bool // a signal asked the family to stop
	stopHurry   func() bool
	stopGiveUp  func() bool
}

var _ actor.Actor = (*Membership)(nil)

// Props returns the membership's props.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return New(cfg) })
}

// New returns a membership actor.
func New(cfg Config) *Membership {
	if cfg.Lease <= 0 {
		cfg.Lease = 3 * time.Second
	}
	if cfg.StopLimit <= 0 {
		cfg.StopLimit = 30 * time.Second
	}
	if cfg.RetryMost <= 0 {
		cfg.RetryMost = 5 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = supervision.WallClock{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Membership{cfg: cfg, log: log}
}

// The membership's own messages: answers of its workers and its
// timers, each under the generation of the session it belongs to.
type (
	answer struct {
		gen int
		msg any
	}
	joined struct {
		member *member.Member
		err    error
	}
	joinAgain    struct{}
	sessionEnded struct{}
	lockTaken    struct {
		lock *fence.Lock
		err  error
	}
	waitGivenUp struct{}
	familyEnded struct {
		status string
		ended  bool
		err    error
	}
	started struct {
		hold   *member.Holding
		batch  *fence.Batcher
		fam    Family
		placer *actor.PID
		lim    *limiter
		err    error
	}
	holdLost struct{}
	hurry    struct{}
	giveUp   struct{}
	finished struct {
		rejoin bool
		err    error
	}
	opened struct {
		session *fence.Session
		err     error
	}
	reopenAgain struct{}
)

// Receive dispatches one message.
func (m *Membership) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.self, m.system = ctx.Self(), ctx.ActorSystem()
		if m.cfg.Session != nil {
			m.begin(m.cfg.Session)
		} else {
			m.reopen()
		}
	case *actor.Stopping:
		m.handleStopping()
	case Signal:
		m.handleSignal()
	case answer:
		if msg.gen == m.gen && m.phase != Ended {
			m.handle(msg.msg)
		}
	}
}

// handle dispatches an answer of the current session.
func (m *Membership) handle(msg any) {
	switch msg := msg.(type) {
	case joined:
		m.handleJoined(msg)
	case joinAgain:
		if m.phase == Joining && !m.inFlight {
			m.join()
		}
	case sessionEnded:
		m.handleSessionEnded()
	case lockTaken:
		m.handleLockTaken(msg)
	case waitGivenUp:
		m.handleWaitGivenUp()
	case familyEnded:
		m.handleFamilyEnded(msg)
	case rootReady:
		m.handleRootReady(msg)
	case awaitAgain:
		if m.phase == StandingBy && !m.inFlight {
			m.awaitRoot()
		}
	case started:
		m.handleStarted(msg)
	case messages.FamilyStopped:
		m.handleFamilyStopped(msg)
	case placerDone:
		m.handlePlacerDone(msg)
	case holdLost:
		m.handleHoldLost()
	case hurry:
		m.handleHurry()
	case giveUp:
		m.handleGiveUp()
	case finished:
		m.handleFinished(msg)
	case opened:
		m.handleOpened(msg)
	case reopenAgain:
		if m.phase == Reopening && !m.inFlight {
			m.reopen()
		}
	}
}

// enter moves the membership to phase p.
func (m *Membership) enter(p Phase) {
	m.phase = p
	if m.cfg.Changed != nil {
		m.cfg.Changed(p)
	}
}

// send tells the membership msg as an answer of the current session.
func (m *Membership) send(msg any) {
	m.system.Root.Send(m.self, answer{gen: m.gen, msg: msg})
}

// call runs f on a goroutine of its own, with the lease as the
// deadline of the context it gets when within is set, and tells the
// membership its answer.
func (m *Membership) call(within time.Duration, f func(context.Context) any) {
	m.inFlight = true
	gen, self, system := m.gen, m.self, m.system
	go func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if within > 0 {
			ctx, cancel = context.WithTimeout(ctx, within)
		}
		defer cancel()
		system.Root.Send(self, answer{gen: gen, msg: f(ctx)})
	}()
}

// after tells the membership msg after d; the function it returns
// cancels it.
func (m *Membership) after(d time.Duration, msg any) func() bool {
	gen, self, system := m.gen, m.self, m.system
	return m.cfg.Clock.AfterFunc(d, func() { system.Root.Send(self, answer{gen: gen, msg: msg}) })
}

// lost says whether the session's lease has ended.
func (m *Membership) lost() bool {
	select {
	case <-m.session.Done():
		return true
	default:
		return false
	}
}

// begin starts a membership on session s: it joins the family.
func (m *Membership) begin(s *fence.Session) {
	m.gen++
	m.session, m.member = s, nil
	m.givingUp, m.rejoin, m.warned = false, false, false
	gen, self, system := m.gen, m.self, m.system
	go func() {
		<-s.Done() // closed by the lease's end or the session's Close
		system.Root.Send(self, answer{gen: gen, msg: sessionEnded{}})
	}()
	m.enter(Joining)
	m.joinBy = m.cfg.Clock.Now().Add(2 * m.cfg.Lease)
	m.join()
}

// join tries once to enter the family.
func (m *Membership) join() {
	s, family := m.session, m.cfg.Family
	cfg := member.Config{Name: m.cfg.Name, Address: m.cfg.Address, Root: m.cfg.Root, Placement: PlacementOf(m.cfg.Spread)}
	m.call(m.cfg.Lease+fence.DefaultDialTimeout, func(ctx context.Context) any {
		mem, err := member.Join(ctx, s, family, cfg)
		return joined{member: mem, err: err}
	})
}

// PlacementOf is the member record's placement: "being" when spread.
func PlacementOf(spread bool) string {
	if spread {
		return "being"
	}
	return "family"
}

func (m *Membership) handleJoined(msg joined) {
	m.inFlight = false
	switch member.AfterJoin(msg.err, !m.cfg.Clock.Now().Before(m.joinBy)) {
	case member.Joined:
	case member.JoinAgain:
		if m.pending > 0 {
			m.log.Info("signal received while joining: leaving")
			m.finish(ending{})
			return
		}
		if m.lost() {
			m.finish(ending{err: fault.Errorf(fault.ClassCluster, "cannot join the family %s: the member's etcd lease ended", m.cfg.Family)})
			return
		}
		m.after(m.cfg.Lease/4, joinAgain{})
		return
	case member.JoinRefused:
		m.finish(ending{err: fault.Errorf(fault.ClassConfiguration, "%w", msg.err)})
		return
	default:
		m.finish(ending{err: fault.Errorf(fault.ClassCluster, "cannot join the family %s: %w", m.cfg.Family, msg.err)})
		return
	}
	m.member = msg.member
	m.log.Info("joined the family", "family", m.cfg.Family, "lease", fmt.Sprintf("%x", m.session.Lease()))
	m.lifeline = watchMembers(m.session, m.member, m.cfg.Lease, m.log)
	m.cfg.Families.StandBy(m.session)
	m.enter(StandingBy)
	switch {
	case m.pending > 0:
		m.log.Info("signal received: leaving the family while standing by")
		m.finish(ending{})
	case m.lost():
		m.log.Warn("the member's etcd lease ended while standing by")
		m.finish(ending{rejoin: true})
	case m.cfg.Spread:
		m.checkEnded()
	default:
		m.standBy()
	}
}

// watchMembers runs the member's lifeline for the rest of its
// membership (docs/cluster.md#a-dead-members-lease): the lease of a
// member whose process is gone is ended at once, not at the lease's
// end. It returns the lifeline's stop.
func watchMembers(s *fence.Session, mem *member.Member, lease time.Duration, log *slog.Logger) func() {
	ctx, cancel := context.WithCancel(context.Background())
	lifeline := member.Lifeline{Session: s, Self: mem.Info().Lease, Every: lease / 3, Log: log}
	done := make(chan struct{})
	go func() { defer close(done); lifeline.Run(ctx) }()
	return func() { cancel(); <-done }
}

// standBy waits for the root's lock.
func (m *Membership) standBy() {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancelWait = cancel
	s := m.session
	m.log.Info("standing by for the family's lock")
	m.call(0, func(context.Context) any {
		l, err := s.Lock(ctx, member.RootBeing)
		return lockTaken{lock: l, err: err}
	})
}

func (m *Membership) handleLockTaken(msg lockTaken) {
	if m.phase != StandingBy || m.cancelWait == nil {
		return // a wait given up: the lock goes with the lease
	}
	m.cancelWait()
	m.cancelWait = nil
	m.inFlight = false
	switch {
	case m.givingUp:
		// A lock taken meanwhile is let go with the membership's end.
		m.lock = msg.lock
		m.finish(ending{rejoin: m.rejoin})
	case msg.err != nil:
		// The lease ended, or etcd failed the wait: join again once
		// etcd answers.
		m.log.Warn("the wait for the family's lock failed", "err", msg.err)
		m.finish(ending{rejoin: true})
	default:
		m.lock = msg.lock
		m.log = m.log.With("token", msg.lock.Token())
		m.enter(Holding)
		m.checkEnded()
	}
}

// giveUpWaiting ends the wait for the root's lock, and the membership
// once the wait has answered. A wait that does not end (etcd's mutex
// undoes a failed wait with no deadline of its own) is given up a lease
// later; whatever it took goes with the session's lease.
func (m *Membership) giveUpWaiting(rejoin bool) {
	m.givingUp, m.rejoin = true, rejoin
	m.cancelWait()
	m.after(m.cfg.Lease, waitGivenUp{})
}

func (m *Membership) handleWaitGivenUp() {
	if m.phase == StandingBy && m.cancelWait != nil {
		m.cancelWait = nil
		m.inFlight = false
		m.finish(ending{rejoin: m.rejoin})
	}
}

// checkEnded reads whether the family has ended before the member runs
// any of it.
func (m *Membership) checkEnded() {
	s := m.session
	m.call(m.cfg.Lease, func(ctx context.Context) any {
		status, ended, err := s.FamilyEnded(ctx)
		return familyEnded{status: status, ended: ended, err: err}
	})
}

func (m *Membership) handleFamilyEnded(msg familyEnded) {
	m.inFlight = false
	switch {
	case msg.err != nil:
		m.finish(ending{err: fault.Errorf(fault.ClassCluster, "%w", msg.err)})
	case msg.ended:
		m.log.Info("the family has ended: nothing to hold", "status", msg.status)
		m.finish(ending{})
	case m.cfg.Spread:
		m.awaitRoot()
	default:
		m.startWhole()
	}
}

// handleSignal answers a signal as the phase has it.
func (m *Membership) handleSignal() {
	switch {
	case m.phase == Stopping || m.phase == Ended:
	case m.phase == Reopening && !m.inFlight:
		m.end(nil)
	case m.fam != nil:
		m.signals++
		m.escalate(member.OnSignal(m.cfg.Spread, m.signals), m.signals)
	case m.cancelWait != nil:
		if !m.givingUp {
			m.log.Info("signal received: leaving the family while standing by")
			m.giveUpWaiting(false)
		}
	case m.inFlight || m.phase == Holding || m.phase == Placing:
		m.pending++
	case m.phase == Joining:
		m.log.Info("signal received while joining: leaving")
		m.finish(ending{})
	case m.phase == StandingBy:
		m.log.Info("signal received while waiting for the root's first state: leaving")
		m.finish(ending{})
	}
}

// handleSessionEnded answers the end of the member's lease.
func (m *Membership) handleSessionEnded() {
	switch {
	case m.phase == Stopping || m.phase == Ended || m.phase == Reopening:
	case m.cancelWait != nil:
		if !m.givingUp {
			m.log.Warn("the member's etcd lease ended while standing by")
			m.giveUpWaiting(true)
		}
	case m.inFlight:
		// The worker's answer comes, and the next step sees the loss.
	case m.phase == Joining:
		m.finish(ending{err: fault.Errorf(fault.ClassCluster, "cannot join the family %s: the member's etcd lease ended", m.cfg.Family)})
	case m.phase == StandingBy:
		m.finish(ending{rejoin: true})
	case m.fam != nil && (m.cfg.Spread || !m.asked):
		if m.cfg.Spread {
			m.log.Error("the member's etcd lease ended: its beings stop at once and write nothing more")
		} else {
			m.log.Error("the member's etcd lease ended: the family stops at once and writes nothing more")
		}
		m.finish(ending{rejoin: true, stopFamily: true})
	}
}

// handleStopping ends what the actor started and nobody waits for: a
// membership stopped from outside leaves its session to the command.
func (m *Membership) handleStopping() {
	m.stopTimers()
	if m.stopLost != nil {
		close(m.stopLost)
		m.stopLost = nil
	}
}

func (m *Membership) stopTimers() {
	if m.stopHurry != nil {
		m.stopHurry()
		m.stopHurry = nil
	}
	if m.stopGiveUp != nil {
		m.stopGiveUp()
		m.stopGiveUp = nil
	}
}

// reopen opens a new session once etcd answers again.
func (m *Membership) reopen() {
	m.enter(Reopening)
	dial := m.cfg.Dial
	m.call(0, func(context.Context) any {
		s, err := fence.Open(dial)
		return opened{session: s, err: err}
	})
}

func (m *Membership) handleOpened(msg opened) {
	m.inFlight = false
	switch {
	case msg.err == nil && m.pending > 0:
		// A signal while etcd was away.
		_ = msg.session.Close()
		m.end(nil)
	case msg.err == nil:
		m.log.Info("etcd answers again: joining the family anew")
		m.begin(msg.session)
	case m.pending > 0:
		m.end(nil)
	default:
		if !m.warned {
			m.log.Warn("etcd is unreachable: waiting for it to join the family again", "err", msg.err)
			m.warned = true
		}
		m.after(time.Second, reopenAgain{})
	}
}

// end reports the outcome.
func (m *Membership) end(err error) {
	m.enter(Ended)
	if m.cfg.Ended != nil {
		m.cfg.Ended(err)
	}
}
