package testkit

import (
	"sync"
	"time"
)

// FastClock is a simulated clock for tests of long spans (an hour of
// spending, a day of cycles) that must not take that long: every timer
// fires at once, on its own goroutine, after moving the clock forward to
// its deadline. Nothing waits for real time, and every waiter wakes at or
// after the instant it asked for. Now only moves when a timer is set.
type FastClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan struct{}
}

// NewFastClock returns a FastClock standing at start.
func NewFastClock(start time.Time) *FastClock { return &FastClock{now: start} }

// Now is the simulated instant.
func (c *FastClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc moves the clock to now+d (unless it is already past it) and
// runs f on a new goroutine. The returned stop function reports false:
// the timer has always fired already.
func (c *FastClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	if at := c.now.Add(d); at.After(c.now) {
		c.now = at
	}
	now := c.now
	kept := c.waiters[:0]
	var woken []chan struct{}
	for _, w := range c.waiters {
		if !now.Before(w.at) {
			woken = append(woken, w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
	c.mu.Unlock()
	for _, ch := range woken {
		close(ch)
	}
	go f()
	return func() bool { return false }
}

// Reached returns a channel closed once the clock stands at or after t.
func (c *FastClock) Reached(t time.Time) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if !c.now.Before(t) {
		close(ch)
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: t, ch: ch})
	return ch
}
