// Package limits is the family's spend limiter (docs/money.md#spend-limits):
// one actor that admits every being's completion reservation against a
// family limit and each being's own limit, in USD per rolling hour, so
// that concurrent beings can never exceed the family limit together. The
// arithmetic is the pure Window; the actor adds only the mailbox.
package limits

import (
	"slices"
	"time"

	"github.com/wisent/singularity/internal/store/money"
)

// Span is the rolling window of the limits.
const Span = time.Hour

// Window is the spending of the last hour: every admitted reservation
// (until settled) and every settled cost, with the instant it counts
// from. It keeps running sums, so an admission costs the same however
// many entries the hour holds. It is not safe for concurrent use.
type Window struct {
	// Family is the family's limit per Span; nil for none.
	Family *money.Amount

	entries []*entry // in order of at; settled reservations are dead
	first   int      // entries before it have left the window
	open    map[uint64]*entry
	total   money.Amount
	count   int // live entries
	beings  map[string]*sum
	next    uint64
}

type entry struct {
	ticket uint64
	being  string
	amount money.Amount
	at     time.Time
	dead   bool
}

type sum struct {
	amount money.Amount
	count  int
}

// Admit admits a reservation of amount for being at now when it fits
// both limits (beingLimit nil for none): everything that counts within
// the last Span plus amount is at most the limit. It returns the ticket,
// or the earliest instant at which the reservation could fit. A
// reservation larger than a limit by itself is admitted once nothing
// else counts against that limit, so a being is never stopped for good.
func (w *Window) Admit(being string, amount money.Amount, beingLimit *money.Amount, now time.Time) (ticket uint64, retryAt time.Time, ok bool) {
	w.expire(now)
	own := w.beings[being]
	familyOK := w.fits(w.total, w.count, amount, w.Family)
	beingOK := own == nil || w.fits(own.amount, own.count, amount, beingLimit)
	if !familyOK || !beingOK {
		var at time.Time
		if !familyOK {
			at = w.retryAt(amount, w.Family, func(*entry) bool { return true })
		}
		if !beingOK {
			at = maxTime(at, w.retryAt(amount, beingLimit, func(e *entry) bool { return e.being == being }))
		}
		return 0, at, false
	}
	w.next++
	w.add(&entry{ticket: w.next, being: being, amount: amount, at: now})
	if w.open == nil {
		w.open = map[uint64]*entry{}
	}
	w.open[w.next] = w.entries[len(w.entries)-1]
	return w.next, time.Time{}, true
}

// Settle replaces ticket's reservation with the actual cost, counted
// from now (a later instant than the reservation, so the window never
// forgets a cost sooner than its debit's own hour).
func (w *Window) Settle(ticket uint64, cost money.Amount, now time.Time) {
	e, ok := w.open[ticket]
	if !ok {
		return
	}
	delete(w.open, ticket)
	w.remove(e)
	if cost.Sign() > 0 {
		w.add(&entry{ticket: ticket, being: e.being, amount: cost, at: now})
	}
}

// Spent is what counts against the family limit now (settled costs and
// open reservations of the last Span).
func (w *Window) Spent(now time.Time) money.Amount {
	w.expire(now)
	return w.total
}

// add puts e in the window, in order of at.
func (w *Window) add(e *entry) {
	i := len(w.entries)
	for i > w.first && w.entries[i-1].at.After(e.at) {
		i-- // a clock that went back: rare, so a short walk
	}
	w.entries = slices.Insert(w.entries, i, e)
	w.total = w.total.Add(e.amount)
	w.count++
	if w.beings == nil {
		w.beings = map[string]*sum{}
	}
	s := w.beings[e.being]
	if s == nil {
		s = &sum{}
		w.beings[e.being] = s
	}
	s.amount = s.amount.Add(e.amount)
	s.count++
}

// remove takes e's amount out of the sums; the entry stays, dead, until
// it leaves the window.
func (w *Window) remove(e *entry) {
	if e.dead {
		return
	}
	e.dead = true
	w.total = w.total.Sub(e.amount)
	w.count--
	s := w.beings[e.being]
	s.amount = s.amount.Sub(e.amount)
	if s.count--; s.count == 0 {
		delete(w.beings, e.being)
	}
}

// expire drops what no longer counts: entries at or before now − Span.
func (w *Window) expire(now time.Time) {
	cut := now.Add(-Span)
	for w.first < len(w.entries) && !w.entries[w.first].at.After(cut) {
		e := w.entries[w.first]
		w.remove(e)
		delete(w.open, e.ticket)
		w.entries[w.first] = nil
		w.first++
	}
	if w.first > 1024 && w.first*2 > len(w.entries) {
		w.entries = append(w.entries[:0], w.entries[w.first:]...)
		w.first = 0
	}
}

// fits reports whether amount fits under limit beside spent (count
// entries).
func (w *Window) fits(spent money.Amount, count int, amount money.Amount, limit *money.Amount) bool {
	return limit == nil || count == 0 || spent.Add(amount).Cmp(*limit) <= 0
}

// retryAt is the earliest instant at which amount fits under limit
// beside the live entries that match: when enough of them have left
// the window (or all have).
func (w *Window) retryAt(amount money.Amount, limit *money.Amount, match func(*entry) bool) time.Time {
	spent, count := money.Zero, 0
	for _, e := range w.entries[w.first:] {
		if !e.dead && match(e) {
			spent = spent.Add(e.amount)
			count++
		}
	}
	for _, e := range w.entries[w.first:] {
		if e.dead || !match(e) {
			continue
		}
		spent = spent.Sub(e.amount)
		count--
		if count == 0 || spent.Add(amount).Cmp(*limit) <= 0 {
			return e.at.Add(Span)
		}
	}
	return time.Time{}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
