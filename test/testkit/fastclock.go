package testkit

import (
	"sync"
	"time"
)

// FastClock is a simulated clock for tests of long spans (an hour of
// spending, a day of cycles) that must not take that long: every timer
// fires at once, on its own goroutine, after moving the clock forward to
// its deadline. Nothing waits for real time, and every waiter wakes at or
// after the instant it asked for. Now only moves when a timer is set, and
// timers set at one instant add up, so a test on a FastClock ends on
// what happened, not on an instant.
type FastClock struct {
	mu  sync.Mutex
	now time.Time
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
	if d > 0 {
		c.now = c.now.Add(d)
	}
	c.mu.Unlock()
	go f()
	return func() bool { return false }
}
