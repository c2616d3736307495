package testkit

import (
	"sync/atomic"
	"testing"
	"time"
)

// StepClock is a supervision.Clock for tests that want to see every
// timer the code under test asks for and decide when it fires: AfterFunc
// hands each timer to the test (Next) instead of waiting, so backoff
// schedules are checked exactly and nothing sleeps.
type StepClock struct {
	timers chan *Timer
}

// Timer is one AfterFunc call seen by a StepClock.
type Timer struct {
	After   time.Duration
	fire    func()
	stopped atomic.Bool
}

// Fire runs the timer's function now (on the caller's goroutine) unless
// it was stopped; it reports whether it ran.
func (t *Timer) Fire() bool {
	if t.stopped.Swap(true) {
		return false
	}
	t.fire()
	return true
}

// NewStepClock returns a clock holding up to 1024 timers not yet taken.
func NewStepClock() *StepClock { return &StepClock{timers: make(chan *Timer, 1024)} }

// Now is the wall clock's.
func (*StepClock) Now() time.Time { return time.Now() }

// AfterFunc records the timer for Next; the returned function stops it.
func (c *StepClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &Timer{After: d, fire: f}
	c.timers <- t
	return func() bool { return !t.stopped.Swap(true) }
}

// Next waits up to limit for the next timer asked for.
func (c *StepClock) Next(tb testing.TB, limit time.Duration) *Timer {
	tb.Helper()
	select {
	case t := <-c.timers:
		return t
	case <-time.After(limit):
		tb.Fatalf("no timer was set within %v", limit)
		return nil
	}
}

// ReadClock is a supervision.Clock whose instants are what the function
// returns while its timers are the wall clock's: for tests that pin the
// instants the code under test records (a signed timestamp, a journal's
// times) but leave its waits to real time.
type ReadClock func() time.Time

// Now is the function's instant.
func (c ReadClock) Now() time.Time { return c() }

// AfterFunc is time.AfterFunc.
func (ReadClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
