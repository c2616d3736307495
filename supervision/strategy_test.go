package supervision

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/testkit"
)

// recordingSupervisor is an actor.Supervisor that records what it was
// asked to do.
type recordingSupervisor struct {
	mu        sync.Mutex
	restarted []string
	stopped   []string
	escalated []any
}

func (s *recordingSupervisor) Children() []*actor.PID { return nil }
func (s *recordingSupervisor) EscalateFailure(reason any, _ any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.escalated = append(s.escalated, reason)
}
func (s *recordingSupervisor) RestartChildren(pids ...*actor.PID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pids {
		s.restarted = append(s.restarted, p.Id)
	}
}
func (s *recordingSupervisor) StopChildren(pids ...*actor.PID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pids {
		s.stopped = append(s.stopped, p.Id)
	}
}
func (s *recordingSupervisor) ResumeChildren(...*actor.PID) {}

func (s *recordingSupervisor) counts() (restarted, stopped, escalated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.restarted), len(s.stopped), len(s.escalated)
}

var transient = fault.Upstream(fault.ClassMCP, fault.Transient, "Las process exited: %w", ErrLasExited)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{}
	tests := []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{0, 0.5, 100 * time.Millisecond},
		{1, 0.5, 200 * time.Millisecond},
		{2, 0.5, 400 * time.Millisecond},
		{0, 0, 80 * time.Millisecond},
		{0, 1, 120 * time.Millisecond},
		{6, 0.5, 6400 * time.Millisecond},
		{7, 0.5, 10 * time.Second}, // 12.8 s capped
		{7, 0, 8 * time.Second},    // jitter applies below the cap
		{60, 0.99, 10 * time.Second},
		{-1, 0.5, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%v", tt.attempt, tt.r), func(t *testing.T) {
			assert.Equal(t, tt.want, b.Delay(tt.attempt, tt.r))
		})
	}
	assert.Equal(t, 5*time.Millisecond, Backoff{Initial: 5 * time.Millisecond, Jitter: -1}.Delay(0, 0.9))
}

func TestBackoffBoundsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Initial: time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "initial")),
			Max:     time.Duration(rapid.Int64Range(1, int64(time.Minute)).Draw(t, "max")),
			Jitter:  rapid.Float64Range(0.01, 0.9).Draw(t, "jitter"),
		}
		attempt := rapid.IntRange(0, 200).Draw(t, "attempt")
		r := rapid.Float64Range(0, 0.999999).Draw(t, "r")
		d := b.Delay(attempt, r)
		full := b.withDefaults()
		if d > full.Max {
			t.Fatalf("delay %v over the cap %v", d, full.Max)
		}
		if lo := time.Duration(float64(full.Initial) * (1 - full.Jitter)); d < lo-1 {
			t.Fatalf("delay %v under the floor %v", d, lo)
		}
	})
}

func TestStrategyRestartsWithBackoffThenGivesUp(t *testing.T) {
	clock := testkit.NewManualClock(time.Unix(1_700_000_000, 0))
	var events []Event
	s := ForLas(LasConfig{
		Clock:  clock,
		Random: func() float64 { return 0.5 }, // nominal delays
		Notify: func(_ *actor.ActorSystem, ev Event) { events = append(events, ev) },
	})
	sup := &recordingSupervisor{}
	child := actor.NewPID("nonhost", "being-ada/las")

	wantDelays := []time.Duration{100, 200, 400, 800, 1600}
	for i, ms := range wantDelays {
		s.HandleFailure(nil, sup, child, nil, transient, nil)
		require.Len(t, events, i+1)
		assert.Equal(t, RestartScheduled, events[i].Kind)
		assert.Equal(t, ms*time.Millisecond, events[i].Delay)
		assert.Equal(t, i+1, events[i].Restarts)

		clock.Advance(ms*time.Millisecond - time.Millisecond)
		restarted, _, _ := sup.counts()
		assert.Equal(t, i, restarted, "restart must wait for the backoff")
		clock.Advance(time.Millisecond)
		restarted, _, _ = sup.counts()
		assert.Equal(t, i+1, restarted)
	}
	assert.Equal(t, 5, s.Restarts(child))

	// The sixth failure inside the 60 s window exceeds the intensity.
	s.HandleFailure(nil, sup, child, nil, transient, nil)
	restarted, stopped, _ := sup.counts()
	assert.Equal(t, 5, restarted)
	assert.Equal(t, 1, stopped)
	assert.Equal(t, IntensityExceeded, events[len(events)-1].Kind)
}

func TestStrategyWindowForgetsOldRestarts(t *testing.T) {
	clock := testkit.NewManualClock(time.Unix(1_700_000_000, 0))
	var last Event
	s := ForLas(LasConfig{
		Clock:     clock,
		Random:    func() float64 { return 0.5 },
		Intensity: Intensity{MaxRestarts: 2, Within: 10 * time.Second},
		Notify:    func(_ *actor.ActorSystem, ev Event) { last = ev },
	})
	sup := &recordingSupervisor{}
	child := actor.NewPID("nonhost", "las")
	s.HandleFailure(nil, sup, child, nil, transient, nil)
	clock.Advance(time.Second)
	s.HandleFailure(nil, sup, child, nil, transient, nil)
	assert.Equal(t, 200*time.Millisecond, last.Delay)
	clock.Advance(11 * time.Second) // both restarts leave the window
	s.HandleFailure(nil, sup, child, nil, transient, nil)
	assert.Equal(t, RestartScheduled, last.Kind)
	assert.Equal(t, 100*time.Millisecond, last.Delay, "a quiet window resets the backoff")
	assert.Equal(t, 3, last.Restarts)
	clock.Advance(time.Second)
	restarted, stopped, _ := sup.counts()
	assert.Equal(t, 3, restarted)
	assert.Zero(t, stopped)
}

func TestLasDecider(t *testing.T) {
	tests := []struct {
		name   string
		reason any
		want   actor.Directive
	}{
		{"exited", transient, actor.RestartDirective},
		{"stdout closed", fmt.Errorf("ctx: %w", ErrLasStdoutClosed), actor.RestartDirective},
		{"stdin write", fault.Upstream(fault.ClassMCP, fault.Transient, "x: %w", ErrLasStdinWrite), actor.RestartDirective},
		{"ping", fault.Upstream(fault.ClassMCP, fault.Transient, "x: %w", ErrLasUnresponsive), actor.RestartDirective},
		{"oversize", fault.Upstream(fault.ClassMCP, fault.Transient, "x: %w", ErrLasLineTooLong), actor.RestartDirective},
		{"surface after restart", fault.Upstream(fault.ClassMCP, fault.Transient, "required Las surface unavailable: finance"), actor.RestartDirective},
		{"version", fault.Upstream(fault.ClassMCP, fault.Permanent, "Las negotiated an unsupported MCP version"), actor.StopDirective},
		{"surface at boot", fault.Upstream(fault.ClassMCP, fault.Permanent, "required Las surface unavailable: finance"), actor.StopDirective},
		{"spawn", fault.Upstream(fault.ClassMCP, fault.Permanent, "cannot start Las: %w", errors.New("no such file")), actor.StopDirective},
		{"bug", "index out of range", actor.RestartDirective},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, LasDecider(tt.reason))
		})
	}
}

func TestStrategyPermanentStopsWithoutRestart(t *testing.T) {
	clock := testkit.NewManualClock(time.Unix(1_700_000_000, 0))
	var kinds []EventKind
	s := ForLas(LasConfig{Clock: clock, Notify: func(_ *actor.ActorSystem, ev Event) { kinds = append(kinds, ev.Kind) }})
	sup := &recordingSupervisor{}
	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "b/las"), nil,
		fault.Upstream(fault.ClassMCP, fault.Permanent, "Las negotiated an unsupported MCP version"), nil)
	clock.Advance(time.Hour)
	restarted, stopped, _ := sup.counts()
	assert.Zero(t, restarted)
	assert.Equal(t, 1, stopped)
	assert.Equal(t, []EventKind{Stopped}, kinds)
}

func TestStrategyRoutesByChild(t *testing.T) {
	clock := testkit.NewManualClock(time.Unix(1_700_000_000, 0))
	var got []string
	record := func(_ *actor.ActorSystem, ev Event) { got = append(got, ev.Policy+":"+ev.Kind.String()) }
	lasCfg := LasConfig{Clock: clock, Notify: record}
	childPolicy := Policy{Name: "child-being", Decider: func(any) actor.Directive { return actor.StopDirective }, Notify: record}
	s := NewStrategy([]Route{LasRoute(lasCfg), {Match: ChildPrefixed("being-"), Policy: childPolicy}}, WithClock(clock))
	sup := &recordingSupervisor{}

	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/las"), nil, transient, nil)
	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/being-bo"), nil, transient, nil)
	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/ledger"), nil, transient, nil)
	assert.Equal(t, []string{"las:restart scheduled", "child-being:stopped"}, got)
	_, stopped, escalated := sup.counts()
	assert.Equal(t, 1, stopped)
	assert.Equal(t, 1, escalated, "a child no route matches is escalated")
}

func TestBeingChildrenEscalateLedgerFailure(t *testing.T) {
	clock := testkit.NewManualClock(time.Unix(1_700_000_000, 0))
	var got []string
	record := func(_ *actor.ActorSystem, ev Event) { got = append(got, ev.Policy+":"+ev.Kind.String()) }
	s := ForBeingChildren(BeingChildrenConfig{
		Las:    LasConfig{Clock: clock, Notify: record},
		Child:  ChildBeingConfig{Notify: record},
		Ledger: LedgerConfig{Notify: record},
	})
	sup := &recordingSupervisor{}
	ledgerFailure := errors.New("ledger bug")

	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/"+LedgerChildName), nil, ledgerFailure, nil)
	clock.Advance(time.Hour)
	restarted, stopped, escalated := sup.counts()
	assert.Zero(t, restarted, "a ledger is never restarted: it would forget the debits since its spawn")
	assert.Zero(t, stopped)
	require.Equal(t, 1, escalated, "the being itself must be restarted by its parent")
	assert.Equal(t, ledgerFailure, sup.escalated[0])
	assert.Equal(t, []string{"ledger:escalated"}, got, "the ledger has its own route, not the no-route fallback")

	// Its siblings keep their own policies.
	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/"+LasChildName), nil, transient, nil)
	s.HandleFailure(nil, sup, actor.NewPID("nonhost", "family/being-ada/being-bo-1"), nil, transient, nil)
	assert.Equal(t, []string{"ledger:escalated", "las:restart scheduled", "child-being:restart scheduled"}, got)
}
