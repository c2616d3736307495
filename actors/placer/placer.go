// Package placer is the actor that places one member's share of a family
// spread over its members (docs/cluster.md#placement). At every look (a
// third of the lease, or sooner when the store's watch wakes it) it reads
// the placement, takes free beings up to its share and has the family
// actor activate them, gives back what it holds beyond its share, and
// once the family ends or the member leaves, stops its beings children
// before parents across members. Its decisions are internal/member's
// pure policy; its store is a placement.Store (etcd in production, in
// memory in its tests). Every call to the store runs on a goroutine of
// its own whose answer comes back as a message: the placer's mailbox
// never waits on etcd or on a disk.
package placer

import (
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/placement"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// Hold is a being's hold under its lock: its placement (what it loads,
// the fence its steps pass, its children left to the members), and the
// news that one of its steps was refused.
type Hold interface {
	being.Placement
	// Lost is closed once a step of the being was refused.
	Lost() <-chan struct{}
	// Err is the refusal that lost the hold, nil while it holds.
	Err() error
}

// Config configures a placer. Zero durations and a nil Clock or Logger
// take the documented defaults.
type Config struct {
	// Store is the member's placement store.
	Store placement.Store
	// Root is the root being's state directory.
	Root string
	// Lease is the member's lease: a look comes every third of it, and
	// it bounds every call to the store. Zero means 3 s.
	Lease time.Duration
	// Hold makes the hold of a being under a lock the store gave.
	Hold func(l placement.Lock) Hold
	// Identity reads the name, ticker and specialty of the child living
	// in dir from its first state (it runs on a worker goroutine).
	Identity func(dir string) (name, ticker, specialty string, err error)
	// AfterLook, when set, runs on the look's worker goroutine after
	// every look that read the placement: what else the member places
	// by the same look (the family's spend limiter).
	AfterLook func(p placement.Placement)
	// RetryFirst and RetryMost bound the wait before this member takes
	// again a being that failed on it (member.Retries); zero means the
	// lease and 5 minutes.
	RetryFirst, RetryMost time.Duration
	// Wave is the most beings of this member starting at once (loading,
	// starting their Las, booting): a takeover of many beings is
	// activated in waves, the next being starting as soon as one has
	// (messages.BeingStarted), so that a member taking over a dead one's
	// share does not start every Las at once. Zero means 16 per CPU.
	Wave int
	// StopGrace is how long the beings of a member that leaves may take
	// to stop children first before the rest stop at once; zero means
	// twice the lease.
	StopGrace time.Duration
	// Done is told the placer's one Outcome, on the placer's goroutine:
	// it must not block (send it on as a message).
	Done   func(Outcome)
	Clock  supervision.Clock
	Logger *slog.Logger
	// Shuffle orders the beings a look takes (members race for the same
	// free beings, each in its own order); nil is a random order.
	Shuffle func(ids []string)
}

// Outcome is how the placer's share of the family ended.
type Outcome struct {
	// Rejoin: a step of one of its beings was refused. The member must
	// stop the family at once, write nothing more and join anew.
	Rejoin bool
	// Err is the failure that ended the family, if any.
	Err error
	// Held are the directories of the beings that ended for good on
	// this member, and of those it held when its part of the family
	// began to stop (it left, or the family ended), each of which
	// stopped here; sorted (a parent before its children); none when it
	// rejoins.
	Held []string
}

// Begin starts the placer's looks: Family is the family actor that runs
// the member's beings and sends the placer their news, and Root, when
// set, is the root's lock this member took while it wrote the root's
// first state: the root is activated at once.
type Begin struct {
	Family *actor.PID
	Root   placement.Lock
}

// Leave asks the member to leave: its beings stop at their next round
// boundary, children before parents across every member that leaves,
// and the members that stay take them. Members that leave within a
// third of the lease of each other stop children first across all of
// them (member.Settled). Past the stop grace, the rest stop at once.
type Leave struct{}

// Shutdown stops the member's part of the family without waiting for
// one another (a second signal): every being stops at its next round
// boundary (Now: at once), then every lock is let go.
type Shutdown struct{ Now bool }

// Placer is the actor. See the package comment.
type Placer struct {
	cfg     Config
	log     *slog.Logger
	clock   supervision.Clock
	family  *actor.PID
	mine    map[string]*placed // by being id
	retries *member.Retries
	// waiting are the beings taken and not started yet, in the order
	// they were taken; starting counts those started and not booted.
	waiting  []string
	starting int

	// stopping: the family stops for good (its end): beings stop
	// children first, and none is taken. leaving: the member leaves.
	stopping, leaving bool
	// leftAt is when the member began to leave (member.Settled).
	leftAt time.Time
	// shuttingDown: the family was asked to stop; its FamilyStopped
	// ends the placer.
	shuttingDown bool
	// over: the outcome was reported; nothing more is done.
	over bool
	// looking: a look is in flight; again: another one was asked for
	// meanwhile.
	looking, again bool
	// pending counts the ends and unlocks in flight.
	pending int

	stopWatch                       func()
	stopTick, stopHurry, stopSettle func() bool
	// stopped is the family's last word, once it came: the placer
	// ends once the locks still held are let go.
	stopped *messages.FamilyStopped
	// heldAtStop are the directories of the beings that ended here, or
	// stopped here once the member's part began to stop (Outcome.Held).
	heldAtStop map[string]bool
}

var _ actor.Actor = (*Placer)(nil)

// Props returns the placer's props.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return New(cfg) })
}

// New returns a placer.
func New(cfg Config) *Placer {
	if cfg.Lease <= 0 {
		cfg.Lease = 3 * time.Second
	}
	if cfg.RetryFirst <= 0 {
		cfg.RetryFirst = cfg.Lease
	}
	if cfg.RetryMost <= 0 {
		cfg.RetryMost = 5 * time.Minute
	}
	if cfg.Wave <= 0 {
		cfg.Wave = 16 * runtime.GOMAXPROCS(0)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 2 * cfg.Lease
	}
	if cfg.Clock == nil {
		cfg.Clock = supervision.WallClock{}
	}
	if cfg.Shuffle == nil {
		cfg.Shuffle = func(ids []string) { rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] }) }
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Placer{cfg: cfg, log: log, clock: cfg.Clock, mine: map[string]*placed{}, retries: member.NewRetries(cfg.RetryFirst, cfg.RetryMost)}
}

// placed is a being this member holds.
type placed struct {
	dir  string
	lock placement.Lock
	hold Hold // nil while it waits for its wave
	member.HeldBeing
	// activation is what the family is told when the being's wave
	// comes; nil once told.
	activation *family.Activate
	// starting: told, and not booted yet.
	starting bool
	// gone is closed once the being is let go.
	gone chan struct{}
}

// Receive dispatches one message.
func (p *Placer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Stopping:
		p.handleStopping()
	case Begin:
		p.handleBegin(ctx, msg)
	case Leave:
		p.handleLeave(ctx)
	case Shutdown:
		p.handleShutdown(ctx, msg)
	case tick:
		p.look(ctx)
		p.scheduleTick(ctx)
	case wake:
		p.look(ctx)
	case hurry:
		p.handleHurry(ctx)
	case looked:
		p.handleLooked(ctx, msg)
	case locked:
		p.handleLocked(ctx, msg)
	case childrenStopping:
		p.handleChildrenStopping(ctx, msg)
	case let:
		p.handleLet(ctx, msg)
	case lost:
		p.handleLost(msg)
	case messages.SubtreeStopping:
		p.handleSubtreeStopping(ctx, msg)
	case messages.BeingReleased:
		p.handleReleased(ctx, msg)
	case messages.BeingStarted:
		p.handleStarted(ctx, msg)
	case messages.FamilyStopped:
		p.handleFamilyStopped(ctx, msg)
	case messages.CycleReport:
		// A placed family's beings each report their cycles; nobody
		// waits for them here.
	}
}

// The placer's own messages.
type (
	tick   struct{}
	wake   struct{}
	hurry  struct{}
	looked struct {
		pl  placement.Placement
		err error
	}
	// locked is what a look's lock tries took: each with its
	// directory and identity, or the error that keeps it from being
	// activated.
	locked struct{ taken []taken }
	taken  struct {
		id, dir                 string
		lock                    placement.Lock
		name, ticker, specialty string
		err                     error
	}
	childrenStopping struct {
		id  string
		err error
	}
	// let is a being's lock let go, its end recorded first when it
	// ended; familyEnded: the root's end was recorded.
	let struct {
		id          string
		familyEnded bool
	}
	lost struct{ err error }
)

func (p *Placer) handleBegin(ctx actor.Context, msg Begin) {
	p.family = msg.Family
	self, system := ctx.Self(), ctx.ActorSystem()
	wctx, cancel := context.WithCancel(context.Background())
	woken := p.cfg.Store.Watch(wctx)
	go func() {
		for {
			select {
			case <-wctx.Done():
				return
			case <-woken:
				system.Root.Send(self, wake{})
			}
		}
	}()
	p.stopWatch = cancel
	if msg.Root != nil {
		p.activate(ctx, taken{id: placement.RootBeing, dir: filepath.Clean(p.cfg.Root), lock: msg.Root})
	}
	p.scheduleTick(ctx)
	p.look(ctx)
}

func (p *Placer) scheduleTick(ctx actor.Context) {
	if p.over {
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	p.stopTick = p.clock.AfterFunc(p.cfg.Lease/3, func() { system.Root.Send(self, tick{}) })
}

func (p *Placer) handleStopping() {
	if p.stopTick != nil {
		p.stopTick()
	}
	if p.stopWatch != nil {
		p.stopWatch()
	}
	if p.stopHurry != nil {
		p.stopHurry()
	}
	if p.stopSettle != nil {
		p.stopSettle()
	}
	for _, b := range p.mine {
		close(b.gone)
	}
	p.mine = map[string]*placed{}
}

// call runs f on a goroutine of its own with the lease as its deadline,
// and sends its answer to the placer.
func (p *Placer) call(ctx actor.Context, f func(context.Context) any) {
	self, system, lease := ctx.Self(), ctx.ActorSystem(), p.cfg.Lease
	go func() {
		c, cancel := context.WithTimeout(context.Background(), lease)
		defer cancel()
		system.Root.Send(self, f(c))
	}()
}

// look reads the placement, unless a look is in flight: then another
// follows it.
func (p *Placer) look(ctx actor.Context) {
	if p.over || p.family == nil {
		return
	}
	if p.looking {
		p.again = true
		return
	}
	p.looking = true
	store, after := p.cfg.Store, p.cfg.AfterLook
	p.call(ctx, func(c context.Context) any {
		pl, err := store.Look(c)
		if err == nil && after != nil {
			after(pl)
		}
		return looked{pl: pl, err: err}
	})
}

// lookDone ends a look, and starts the one asked for meanwhile.
func (p *Placer) lookDone(ctx actor.Context) {
	p.looking = false
	if p.again {
		p.again = false
		p.look(ctx)
	}
}

// handleLooked acts on a look: it carries stops for good down and their
// ends up, then stops beings in order once the family stops or the
// member leaves, or else takes free beings up to the share and gives
// back what is beyond it. A look that the store did not answer is
// skipped: the next one comes within a third of the lease.
func (p *Placer) handleLooked(ctx actor.Context, msg looked) {
	if p.over {
		return
	}
	if msg.err != nil {
		p.log.Warn("the family's placement could not be read", "err", msg.err)
		p.lookDone(ctx)
		return
	}
	pl := msg.pl
	p.subtrees(ctx, pl)
	if pl.FamilyEnded && !p.stopping {
		p.stopping = true
		p.log.Info("the family has ended: every being stops, children before parents")
	}
	if p.stopping || p.leaving {
		p.stopInOrder(ctx, pl)
		p.lookDone(ctx)
		p.maybeShutdown(ctx)
		return
	}
	mine := make(map[string]bool, len(p.mine))
	releasing := 0
	for id, b := range p.mine {
		mine[id] = true
		if b.Releasing {
			releasing++
		}
	}
	take, give := member.Plan(pl, mine, releasing)
	for range give {
		p.giveBack(ctx)
	}
	now := p.clock.Now()
	take = slices.DeleteFunc(take, func(id string) bool { return !p.retries.Ready(id, now) })
	if len(take) == 0 {
		p.lookDone(ctx)
		return
	}
	p.cfg.Shuffle(take)
	p.tryLocks(ctx, pl.Registered, take)
}

// lockBatches bounds how many lock transactions (each of up to
// placement.MaxTryAll locks) a look has in flight at once.
const lockBatches = 4

// tryLocks tries the locks of take, placement.MaxTryAll in one call,
// on a worker, and reads the identity of each child it took.
func (p *Placer) tryLocks(ctx actor.Context, registered map[string]string, take []string) {
	cfg, log := p.cfg, p.log
	p.call(ctx, func(c context.Context) any {
		dirs := map[string]string{}
		var ids []string
		for _, id := range take {
			dir, err := member.Dir(cfg.Root, registered, id)
			if err != nil {
				log.Warn("a registered being cannot be placed", "being", id, "err", err)
				continue
			}
			dirs[id] = dir
			ids = append(ids, id)
		}
		got := tryAll(c, cfg.Store, ids, log)
		var out []taken
		for _, id := range ids {
			l := got[id]
			if l == nil {
				continue
			}
			t := taken{id: id, dir: filepath.Clean(dirs[id]), lock: l}
			if id != placement.RootBeing {
				// The child's first state names it (its identity never
				// changes).
				t.name, t.ticker, t.specialty, t.err = cfg.Identity(t.dir)
			}
			out = append(out, t)
		}
		return locked{taken: out}
	})
}

// tryAll tries ids' locks in batches, lockBatches at once.
func tryAll(c context.Context, store placement.Store, ids []string, log *slog.Logger) map[string]placement.Lock {
	type answer struct {
		locks map[string]placement.Lock
		n     int
		err   error
	}
	batches := slices.Collect(slices.Chunk(ids, placement.MaxTryAll))
	answers := make(chan answer, len(batches))
	slots := make(chan struct{}, lockBatches)
	for _, batch := range batches {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			locks, err := store.TryLockAll(c, batch)
			answers <- answer{locks: locks, n: len(batch), err: err}
		}()
	}
	got := map[string]placement.Lock{}
	for range batches {
		a := <-answers
		if a.err != nil {
			log.Warn("beings' locks could not be tried", "beings", a.n, "err", a.err)
			continue
		}
		maps.Copy(got, a.locks)
	}
	return got
}

// handleLocked activates what a look took; a being whose identity could
// not be read is let go, and tried again after a wait. What a member
// took while it began to stop is let go at once.
func (p *Placer) handleLocked(ctx actor.Context, msg locked) {
	for _, t := range msg.taken {
		switch {
		case p.over || p.stopping || p.leaving:
			p.unlock(ctx, t.id, t.lock, nil)
		case t.err != nil:
			wait := p.retries.Failed(t.id, p.clock.Now())
			p.log.Warn("a being cannot be activated; this member tries it again no sooner than after a wait", "being", t.id, "wait", wait, "err", t.err)
			p.unlock(ctx, t.id, t.lock, nil)
		default:
			p.activate(ctx, t)
		}
	}
	p.lookDone(ctx)
}

// activate holds the being t took, and has the family start it when its
// wave comes.
func (p *Placer) activate(ctx actor.Context, t taken) {
	p.mine[t.id] = &placed{dir: t.dir, lock: t.lock, HeldBeing: member.HeldBeing{ID: t.id}, gone: make(chan struct{}),
		activation: &family.Activate{Dir: t.dir, Name: t.name, Ticker: t.ticker, Specialty: t.specialty}}
	p.waiting = append(p.waiting, t.id)
	p.log.Info("this member holds a being", "being", t.id, "token", t.lock.Token())
	p.nextWave(ctx)
}

// nextWave starts waiting beings while fewer than a wave are starting.
func (p *Placer) nextWave(ctx actor.Context) {
	for p.starting < p.cfg.Wave && len(p.waiting) > 0 {
		id := p.waiting[0]
		p.waiting = p.waiting[1:]
		if b := p.mine[id]; b != nil && b.activation != nil {
			p.start(ctx, b)
		}
	}
}

// start has the family start b under a hold of its lock.
func (p *Placer) start(ctx actor.Context, b *placed) {
	hold := p.cfg.Hold(b.lock)
	b.hold = hold
	msg := *b.activation
	msg.Placement = hold
	b.activation, b.starting = nil, true
	p.starting++
	self, system := ctx.Self(), ctx.ActorSystem()
	go func() {
		select {
		case <-hold.Lost():
			system.Root.Send(self, lost{err: hold.Err()})
		case <-b.gone:
		}
	}()
	ctx.Send(p.family, msg)
}

// booted counts b out of the starting beings.
func (p *Placer) booted(b *placed) {
	if b.starting {
		b.starting = false
		p.starting--
	}
}

// handleStarted starts the next waiting being once one has booted.
func (p *Placer) handleStarted(ctx actor.Context, msg messages.BeingStarted) {
	if b := p.byDir(msg.Dir); b != nil {
		p.booted(b)
	}
	p.nextWave(ctx)
}

// release asks the family to stop b at its next round boundary. A being
// still waiting for its wave is let go at once, its lock with it, unless
// it stops for good: then it starts now, to stop its children first.
func (p *Placer) release(ctx actor.Context, b *placed, forGood bool) {
	if b.activation != nil && !forGood {
		delete(p.mine, b.ID)
		close(b.gone)
		p.unlock(ctx, b.ID, b.lock, nil)
		return
	}
	if b.activation != nil {
		p.start(ctx, b)
	}
	b.Releasing = true
	b.ForGood = b.ForGood || forGood
	ctx.Send(p.family, family.Release{Dir: b.dir, ForGood: forGood})
}

// held are the ids of this member's beings not asked to stop yet.
func (p *Placer) held() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(p.mine)) {
		if !p.mine[id].Releasing {
			out = append(out, id)
		}
	}
	return out
}

// giveBack asks one being beyond the share (member.GiveBack) to stop at
// its next round boundary; its lock is let go once it has.
func (p *Placer) giveBack(ctx actor.Context) {
	id := member.GiveBack(p.held())
	if id == "" {
		return
	}
	p.log.Info("this member gives a being back", "being", id)
	p.release(ctx, p.mine[id], false)
}

// subtrees carries stops for good down and answers them up
// (member.SubtreeOf).
func (p *Placer) subtrees(ctx actor.Context, pl placement.Placement) {
	for _, id := range slices.Sorted(maps.Keys(p.mine)) {
		b := p.mine[id]
		switch member.SubtreeOf(pl, b.HeldBeing) {
		case member.SubtreeChildrenEnded:
			b.AwaitingChildren = false
			ctx.Send(p.family, family.SubtreeDone{Dir: b.dir})
		case member.SubtreeStopForGood:
			p.log.Info("a being stops for good with its parent", "being", b.ID)
			p.release(ctx, b, true)
		}
	}
}

// stopInOrder asks each being none of whose children still runs to stop
// (member.StopOrder): a child anywhere counts once the family stops for
// good, and until a leave has settled (member.Settled).
func (p *Placer) stopInOrder(ctx actor.Context, pl placement.Placement) {
	mine := make(map[string]bool, len(p.mine))
	for id := range p.mine {
		mine[id] = true
	}
	everywhere := p.stopping || (p.leaving && !member.Settled(p.leftAt, p.clock.Now(), p.cfg.Lease))
	for _, id := range member.StopOrder(pl, mine, p.held(), everywhere) {
		p.release(ctx, p.mine[id], false)
	}
}

// handleSubtreeStopping records that the being stops for good, so that
// its children, wherever they run, stop for good first.
func (p *Placer) handleSubtreeStopping(ctx actor.Context, msg messages.SubtreeStopping) {
	b := p.byDir(msg.Dir)
	if b == nil {
		return
	}
	store, l, id := p.cfg.Store, b.lock, b.ID
	p.call(ctx, func(c context.Context) any {
		return childrenStopping{id: id, err: store.StopChildren(c, l)}
	})
}

func (p *Placer) handleChildrenStopping(ctx actor.Context, msg childrenStopping) {
	b := p.mine[msg.id]
	if b == nil {
		return
	}
	if msg.err != nil {
		// The being's lock is gone, or the store did not answer: its
		// steps are refused from now on, and its next holder stops it
		// again.
		p.log.Warn("a being's children could not be asked to stop", "being", msg.id, "err", msg.err)
		return
	}
	b.AwaitingChildren = true
	p.look(ctx)
}

// byDir is the being of this member living in dir, nil if none.
func (p *Placer) byDir(dir string) *placed {
	dir = filepath.Clean(dir)
	for _, b := range p.mine {
		if b.dir == dir {
			return b
		}
	}
	return nil
}

// handleReleased lets go of a being whose actor ended, recording its end
// first when it will not cycle again (member.EndOf).
func (p *Placer) handleReleased(ctx actor.Context, msg messages.BeingReleased) {
	b := p.byDir(msg.Dir)
	if b == nil {
		return
	}
	if p.stopping || p.leaving {
		p.stoppedHere(b)
	}
	delete(p.mine, b.ID)
	close(b.gone)
	p.booted(b)
	defer p.nextWave(ctx)
	if b.hold == nil || b.hold.Err() != nil {
		p.unlock(ctx, b.ID, b.lock, nil)
		return
	}
	end := member.EndOf(b.ID, msg.Status, msg.Err != nil, b.ForGood)
	switch end {
	case member.EndLetGo:
		if msg.Err != nil {
			wait := p.retries.Failed(b.ID, p.clock.Now())
			p.log.Warn("a being failed on this member; it is let go, and this member takes it again no sooner than after a wait",
				"being", b.ID, "wait", wait, "err", msg.Err)
		} else {
			p.retries.Stopped(b.ID)
		}
		p.unlock(ctx, b.ID, b.lock, nil)
	case member.EndRecorded, member.EndFamily:
		p.stoppedHere(b)
		status := msg.Status
		p.unlock(ctx, b.ID, b.lock, func(c context.Context) (bool, error) {
			err := p.cfg.Store.End(c, b.lock, status)
			return end == member.EndFamily && err == nil, err
		})
	}
}

// unlock lets l go on a worker, recording the being's end first when
// end is set; the answer is a let.
func (p *Placer) unlock(ctx actor.Context, id string, l placement.Lock, end func(context.Context) (bool, error)) {
	p.pending++
	log := p.log
	p.call(ctx, func(c context.Context) any {
		familyEnded := false
		if end != nil {
			ended, err := end(c)
			switch {
			case err != nil && id == placement.RootBeing:
				log.Warn("the family's end could not be recorded", "err", err)
			case err != nil:
				log.Warn("a being's end could not be recorded", "being", id, "err", err)
			case id != placement.RootBeing:
				log.Info("a being has ended", "being", id)
			}
			familyEnded = ended
		}
		if err := l.Unlock(c); err != nil {
			log.Warn("a being's lock could not be let go; it goes with the lease", "being", id, "err", err)
		}
		return let{id: id, familyEnded: familyEnded}
	})
}

func (p *Placer) handleLet(ctx actor.Context, msg let) {
	p.pending--
	if msg.familyEnded && !p.stopping {
		p.stopping = true
		p.log.Info("the family has ended: its root is exhausted; every being stops, children before parents")
		p.look(ctx)
	}
	p.maybeShutdown(ctx)
	p.maybeFinish()
}

// maybeShutdown stops the family once every being of this member has
// stopped, children first, and every lock is let go.
func (p *Placer) maybeShutdown(ctx actor.Context) {
	if p.over || p.shuttingDown || !(p.stopping || p.leaving) || len(p.mine) > 0 || p.pending > 0 {
		return
	}
	p.shuttingDown = true
	ctx.Send(p.family, messages.ShutdownFamily{})
}

func (p *Placer) handleLeave(ctx actor.Context) {
	if p.stopping || p.leaving || p.over {
		return
	}
	p.leaving = true
	store := p.cfg.Store
	p.call(ctx, func(c context.Context) any {
		if err := store.MarkLeaving(c); err != nil {
			// The other members go on counting this one: they take its
			// beings once it has gone.
			p.log.Warn("the other members cannot be told that this one leaves", "err", err)
		}
		return wake{}
	})
	p.log.Info("this member's beings stop at their next round boundary, children before parents, and are handed over")
	self, system := ctx.Self(), ctx.ActorSystem()
	p.leftAt = p.clock.Now()
	p.stopSettle = p.clock.AfterFunc(p.cfg.Lease/3, func() { system.Root.Send(self, wake{}) })
	p.stopHurry = p.clock.AfterFunc(p.cfg.StopGrace, func() { system.Root.Send(self, hurry{}) })
	p.maybeShutdown(ctx)
}

// handleHurry stops the rest of a leaving member's beings at once.
func (p *Placer) handleHurry(ctx actor.Context) {
	if p.over || p.shuttingDown {
		return
	}
	p.log.Warn("this member's beings did not stop children first within the shutdown grace: the rest stop now")
	for _, id := range p.held() {
		p.release(ctx, p.mine[id], false)
	}
}

func (p *Placer) handleShutdown(ctx actor.Context, msg Shutdown) {
	if p.over {
		return
	}
	p.leaving = true
	p.shuttingDown = true
	if p.family == nil {
		p.finish(Outcome{})
		return
	}
	ctx.Send(p.family, messages.ShutdownFamily{Now: msg.Now})
}

// handleFamilyStopped ends the placer once the locks still held are
// let go: every being has stopped.
func (p *Placer) handleFamilyStopped(ctx actor.Context, msg messages.FamilyStopped) {
	if p.over {
		return
	}
	p.stopped = &msg
	for _, id := range slices.Sorted(maps.Keys(p.mine)) {
		b := p.mine[id]
		p.stoppedHere(b)
		delete(p.mine, id)
		close(b.gone)
		p.unlock(ctx, id, b.lock, nil)
	}
	p.maybeFinish()
}

// stoppedHere notes b among the beings that ended or stopped here
// (Outcome.Held), unless it never started here (it waited for its
// wave).
func (p *Placer) stoppedHere(b *placed) {
	if b.hold == nil {
		return
	}
	if p.heldAtStop == nil {
		p.heldAtStop = map[string]bool{}
	}
	p.heldAtStop[b.dir] = true
}

// maybeFinish reports the outcome of a stopped family once no unlock is
// in flight.
func (p *Placer) maybeFinish() {
	if p.over || p.stopped == nil || p.pending > 0 {
		return
	}
	out := Outcome{Held: slices.Sorted(maps.Keys(p.heldAtStop))}
	if p.stopped.Status == state.StatusFailed && p.stopped.Err != nil {
		out.Err = p.stopped.Err
	}
	p.finish(out)
}

// handleLost ends the placer at the first refused step: the member
// stops its beings at once and joins anew.
func (p *Placer) handleLost(msg lost) {
	if p.over {
		return
	}
	p.log.Error("a step was refused: this member's beings stop at once and write nothing more", "err", msg.err)
	p.finish(Outcome{Rejoin: true})
}

func (p *Placer) finish(out Outcome) {
	p.over = true
	if p.stopTick != nil {
		p.stopTick()
	}
	if p.cfg.Done != nil {
		p.cfg.Done(out)
	}
}
