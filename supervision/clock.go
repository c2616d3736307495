package supervision

import "time"

// Clock is the time source of a strategy: when failures happened and when
// a delayed restart fires. Production uses the wall clock; tests inject a
// manual one so backoff and intensity are checked without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f on its own goroutine after d; the returned function
	// cancels it and reports whether it had not fired yet.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// WallClock is the real time.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (WallClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
