package supervision

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Intensity bounds how often a child may be restarted: more than
// MaxRestarts restarts within Within and the child is stopped instead.
// Zero fields take the defaults of docs/las.md#restart-backoff-and-intensity
// (5 within 60 s).
type Intensity struct {
	MaxRestarts int
	Within      time.Duration
}

// Defaults of docs/las.md#restart-backoff-and-intensity.
const (
	DefaultMaxRestarts = 5
	DefaultWithin      = 60 * time.Second
)

func (i Intensity) withDefaults() Intensity {
	if i.MaxRestarts <= 0 {
		i.MaxRestarts = DefaultMaxRestarts
	}
	if i.Within <= 0 {
		i.Within = DefaultWithin
	}
	return i
}

// Decider maps the reason a child failed (the value it panicked with,
// usually a classified *Error) to what its supervisor does.
type Decider func(reason any) actor.Directive

// EventKind names what the strategy decided about one failure.
type EventKind int

const (
	// RestartScheduled: the child will be restarted after Event.Delay.
	RestartScheduled EventKind = iota + 1
	// Stopped: the decider said the failure is not worth a restart.
	Stopped
	// IntensityExceeded: too many restarts within the window; the child
	// is stopped.
	IntensityExceeded
	// Resumed: the child keeps its state and goes on.
	Resumed
	// Escalated: the failure is passed to the parent's own supervisor.
	Escalated
)

func (k EventKind) String() string {
	switch k {
	case RestartScheduled:
		return "restart scheduled"
	case Stopped:
		return "stopped"
	case IntensityExceeded:
		return "restart intensity exceeded"
	case Resumed:
		return "resumed"
	case Escalated:
		return "escalated"
	default:
		return "unknown"
	}
}

// Event is one supervision decision, reported to the policy's Notify hook
// instead of being logged, so the parent can journal or show it.
type Event struct {
	Kind   EventKind
	Policy string
	Parent *actor.PID // the supervising actor, when known
	Child  *actor.PID
	Reason any
	// Restarts counts this child's restarts so far, the scheduled one
	// included.
	Restarts int
	// Delay is the backoff before a scheduled restart.
	Delay time.Duration
}

// Policy is how one kind of child is supervised: its decider, backoff and
// intensity, all in one place.
type Policy struct {
	// Name labels the policy in events ("las", "child-being").
	Name string
	// Decider maps a failure to a directive; nil restarts on every
	// failure.
	Decider Decider
	Backoff Backoff
	// Intensity bounds restarts; past it the child is stopped and Notify
	// hears IntensityExceeded.
	Intensity Intensity
	// Notify hears every decision. It runs on the supervisor's goroutine
	// and must not block (send a message, do not wait for one).
	Notify func(system *actor.ActorSystem, ev Event)
}

// Route sends the failures of the children Match accepts to Policy. A
// parent with several kinds of children gives one route per kind.
type Route struct {
	Match  func(child *actor.PID) bool
	Policy Policy
}

// ChildNamed matches a child whose actor name (the last segment of its
// id) is name, as spawned by SpawnNamed(props, name).
func ChildNamed(name string) func(child *actor.PID) bool {
	return func(child *actor.PID) bool {
		id := child.GetId()
		return id == name || strings.HasSuffix(id, "/"+name)
	}
}

// ChildPrefixed matches a child whose actor name starts with prefix (for
// children named "being-<id>").
func ChildPrefixed(prefix string) func(child *actor.PID) bool {
	return func(child *actor.PID) bool {
		id := child.GetId()
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
		return strings.HasPrefix(id, prefix)
	}
}

// Strategy is a protoactor supervisor strategy built from routes: for
// each failing child the first matching route's policy decides. Restarts
// are delayed by the policy's backoff (the attempt number is the count of
// restarts still inside the intensity window, so a child that stayed up
// for a whole window starts again from the initial delay) and capped by
// its intensity. A failure no route matches is escalated.
//
// Every restarted child hears of it the same way: once the new
// incarnation is up, the strategy sends it a Restarted with its
// restart count (one record per child id, kept by this strategy) and the
// failure that caused the restart; Las and child beings show both in the
// debug tree. The news arrives after Started, but messages queued for the
// child during the backoff may be read before it.
//
// Attach it to the parent's props with actor.WithSupervisor; one value may
// serve many parents (children are told apart by their ids).
type Strategy struct {
	clock  Clock
	random func() float64
	routes []Route

	mu       sync.Mutex
	children map[string]*childRecord
}

type childRecord struct {
	window   []time.Time // restarts inside the intensity window
	restarts int         // restarts ever
}

var _ actor.SupervisorStrategy = (*Strategy)(nil)

// Option configures a Strategy.
type Option func(*Strategy)

// WithClock replaces the wall clock (tests).
func WithClock(c Clock) Option { return func(s *Strategy) { s.clock = c } }

// WithRandom replaces the jitter source, a uniform sample in [0, 1)
// (tests).
func WithRandom(r func() float64) Option { return func(s *Strategy) { s.random = r } }

// NewStrategy returns a strategy over routes.
func NewStrategy(routes []Route, opts ...Option) *Strategy {
	s := &Strategy{clock: WallClock{}, random: uniform, routes: routes, children: map[string]*childRecord{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Restarts reports how many times child has been restarted (scheduled
// restarts included).
func (s *Strategy) Restarts(child *actor.PID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.children[child.GetId()]; r != nil {
		return r.restarts
	}
	return 0
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *Strategy) HandleFailure(system *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, message any) {
	route, ok := s.route(child)
	if !ok {
		supervisor.EscalateFailure(reason, message)
		return
	}
	p := route.Policy
	ev := Event{Policy: p.Name, Parent: selfOf(supervisor), Child: child, Reason: reason}
	directive := actor.RestartDirective
	if p.Decider != nil {
		directive = p.Decider(reason)
	}
	switch directive {
	case actor.ResumeDirective:
		ev.Kind = Resumed
		s.notify(system, p, ev, directive)
		supervisor.ResumeChildren(child)
	case actor.StopDirective:
		ev.Kind = Stopped
		ev.Restarts = s.forget(child)
		s.notify(system, p, ev, directive)
		supervisor.StopChildren(child)
	case actor.EscalateDirective:
		ev.Kind = Escalated
		s.notify(system, p, ev, directive)
		supervisor.EscalateFailure(reason, message)
	default:
		delay, restarts, ok := s.admit(child, p)
		ev.Restarts = restarts
		if !ok {
			ev.Kind = IntensityExceeded
			s.notify(system, p, ev, actor.StopDirective)
			supervisor.StopChildren(child)
			return
		}
		ev.Kind, ev.Delay = RestartScheduled, delay
		s.notify(system, p, ev, actor.RestartDirective)
		news := Restarted{Restarts: restarts, Reason: fmt.Sprint(reason)}
		s.clock.AfterFunc(delay, func() {
			supervisor.RestartChildren(child)
			// The new incarnation reads this after its Started, behind
			// whatever was queued for it during the backoff.
			if system != nil {
				system.Root.Send(child, news)
			}
		})
	}
}

// admit records a restart of child if its policy's intensity allows one
// and returns the backoff before it and the restart count; ok is false
// when the intensity is exceeded (the record is then dropped).
func (s *Strategy) admit(child *actor.PID, p Policy) (delay time.Duration, restarts int, ok bool) {
	in := p.Intensity.withDefaults()
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.children[child.GetId()]
	if r == nil {
		r = &childRecord{}
		s.children[child.GetId()] = r
	}
	kept := r.window[:0]
	for _, t := range r.window {
		if now.Sub(t) < in.Within {
			kept = append(kept, t)
		}
	}
	r.window = kept
	if len(r.window) >= in.MaxRestarts {
		delete(s.children, child.GetId())
		return 0, r.restarts, false
	}
	attempt := len(r.window)
	r.window = append(r.window, now)
	r.restarts++
	return p.Backoff.Delay(attempt, s.random()), r.restarts, true
}

func (s *Strategy) forget(child *actor.PID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if r := s.children[child.GetId()]; r != nil {
		n = r.restarts
	}
	delete(s.children, child.GetId())
	return n
}

func (s *Strategy) route(child *actor.PID) (Route, bool) {
	for _, r := range s.routes {
		if r.Match == nil || r.Match(child) {
			return r, true
		}
	}
	return Route{}, false
}

func (s *Strategy) notify(system *actor.ActorSystem, p Policy, ev Event, d actor.Directive) {
	if system != nil {
		// Keep protoactor's own supervision event stream informed, as its
		// built-in strategies do.
		system.EventStream.Publish(&actor.SupervisorEvent{Child: ev.Child, Reason: ev.Reason, Directive: d})
	}
	if p.Notify != nil {
		p.Notify(system, ev)
	}
}

// selfOf returns the supervising actor's pid when the supervisor exposes
// it (protoactor's actor contexts do).
func selfOf(supervisor actor.Supervisor) *actor.PID {
	if s, ok := supervisor.(interface{ Self() *actor.PID }); ok {
		return s.Self()
	}
	return nil
}
