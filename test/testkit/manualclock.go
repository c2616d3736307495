package testkit

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// ManualClock is a supervision.Clock that moves only when the test
// advances it: a timer fires once Advance has brought the clock to its
// deadline, on Advance's goroutine, in deadline order. Tests of long
// waits (a backoff, a sleep of an hour with nothing asked meanwhile)
// run them in no time, and can count the timers still pending.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*manualTimer
	changed chan struct{}
}

type manualTimer struct {
	at    time.Time
	after time.Duration
	f     func()
	done  bool // fired or stopped
}

// NewManualClock returns a clock standing at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, changed: make(chan struct{}, 1)}
}

// Now is the clock's instant.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f once the clock has advanced by d (a d of zero or
// less at the next Advance); the returned function stops it and reports
// whether it had not fired yet.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	t := &manualTimer{at: c.now.Add(d), after: d, f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := !t.done
		t.done = true
		return stopped
	}
}

// Advance moves the clock forward by d and runs every timer due by
// then, earliest first.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// Pending counts the timers neither fired nor stopped that were set
// for at least atLeast.
func (c *ManualClock) Pending(atLeast time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done && t.after >= atLeast {
			n++
		}
	}
	return n
}

// WaitPending waits up to limit until n timers of at least atLeast are
// pending.
func (c *ManualClock) WaitPending(tb testing.TB, n int, atLeast, limit time.Duration) {
	tb.Helper()
	deadline := time.After(limit)
	for c.Pending(atLeast) < n {
		select {
		case <-c.changed:
		case <-deadline:
			tb.Fatalf("%d of %d timers of at least %v pending after %v", c.Pending(atLeast), n, atLeast, limit)
		}
	}
}
