package member

import "time"

// Retries holds back the beings that failed on this member: a being
// let go after a failure is not taken again by this member until its
// wait is over, a wait that doubles with each failure in a row, from
// First up to Most. Another member may take it meanwhile. A being that
// stops without failing is forgotten. The zero value is not usable; use
// NewRetries. Not safe for concurrent use (the placer's loop owns it).
type Retries struct {
	first, most time.Duration
	failed      map[string]retry
}

type retry struct {
	until time.Time
	wait  time.Duration
}

// NewRetries returns Retries waiting first after a first failure, and
// at most most.
func NewRetries(first, most time.Duration) *Retries {
	return &Retries{first: first, most: most, failed: map[string]retry{}}
}

// Failed records that being failed at now, and returns how long this
// member waits before it takes the being again.
func (r *Retries) Failed(being string, now time.Time) time.Duration {
	wait := r.first
	if last, ok := r.failed[being]; ok {
		wait = min(2*last.wait, r.most)
	}
	r.failed[being] = retry{until: now.Add(wait), wait: wait}
	return wait
}

// Stopped forgets being's failures: it stopped without failing.
func (r *Retries) Stopped(being string) { delete(r.failed, being) }

// Ready says whether this member may take being at now.
func (r *Retries) Ready(being string, now time.Time) bool {
	last, ok := r.failed[being]
	return !ok || !now.Before(last.until)
}
