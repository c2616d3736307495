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
// (until settled) and every settled cost, with when it counts from. It is
// not safe for concurrent use.
type Window struct {
	// Family is the family's limit per Span; nil for none.
	Family *money.Amount

	entries []entry // in order of at
	next    uint64
}

type entry struct {
	ticket uint64
	being  string
	amount money.Amount
	at     time.Time
}

// Admit admits a reservation of amount for being at now when it fits
// both limits (beingLimit nil for none): everything that counts within
// the last Span plus amount is at most the limit. It returns the ticket,
// or the earliest instant at which the reservation could fit. A
// reservation larger than a limit by itself is admitted once nothing
// else counts against that limit, so a being is never stopped for good.
func (w *Window) Admit(being string, amount money.Amount, beingLimit *money.Amount, now time.Time) (ticket uint64, retryAt time.Time, ok bool) {
	w.expire(now)
	familyAt, familyOK := w.fits(amount, w.Family, func(entry) bool { return true })
	beingAt, beingOK := w.fits(amount, beingLimit, func(e entry) bool { return e.being == being })
	if !familyOK || !beingOK {
		return 0, maxTime(familyAt, beingAt), false
	}
	w.next++
	w.entries = append(w.entries, entry{ticket: w.next, being: being, amount: amount, at: now})
	return w.next, time.Time{}, true
}

// Settle replaces ticket's reservation with the actual cost, counted
// from now (a later instant than the reservation, so the window never
// forgets a cost sooner than its debit's own hour).
func (w *Window) Settle(ticket uint64, cost money.Amount, now time.Time) {
	i := slices.IndexFunc(w.entries, func(e entry) bool { return e.ticket == ticket })
	if i < 0 {
		return
	}
	e := w.entries[i]
	w.entries = slices.Delete(w.entries, i, i+1)
	if cost.Sign() <= 0 {
		return
	}
	e.amount, e.at = cost, now
	j, _ := slices.BinarySearchFunc(w.entries, now, func(e entry, t time.Time) int { return e.at.Compare(t) })
	for j < len(w.entries) && !w.entries[j].at.After(now) {
		j++
	}
	w.entries = slices.Insert(w.entries, j, e)
}

// Spent is what counts against the family limit now (settled costs and
// open reservations of the last Span).
func (w *Window) Spent(now time.Time) money.Amount {
	w.expire(now)
	sum := money.Zero
	for _, e := range w.entries {
		sum = sum.Add(e.amount)
	}
	return sum
}

// expire drops what no longer counts: entries older than Span.
func (w *Window) expire(now time.Time) {
	cut := 0
	for cut < len(w.entries) && !w.entries[cut].at.After(now.Add(-Span)) {
		cut++
	}
	w.entries = slices.Delete(w.entries, 0, cut)
}

// fits reports whether amount fits under limit beside the entries that
// match; when it does not, at is the earliest instant it will (when
// enough of them leave the window).
func (w *Window) fits(amount money.Amount, limit *money.Amount, match func(entry) bool) (at time.Time, ok bool) {
	if limit == nil {
		return time.Time{}, true
	}
	sum := money.Zero
	count := 0
	for _, e := range w.entries {
		if match(e) {
			sum = sum.Add(e.amount)
			count++
		}
	}
	if count == 0 || sum.Add(amount).Cmp(*limit) <= 0 {
		return time.Time{}, true
	}
	// Entries leave in order of at: find the first whose leaving makes
	// room (or empties the window).
	for _, e := range w.entries {
		if !match(e) {
			continue
		}
		sum = sum.Sub(e.amount)
		count--
		if count == 0 || sum.Add(amount).Cmp(*limit) <= 0 {
			return e.at.Add(Span), false
		}
	}
	return time.Time{}, false // not reached: the last entry empties the window
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
