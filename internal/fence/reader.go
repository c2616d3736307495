package fence

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wisent/singularity/internal/store/state"
)

// A reader such as `singularity journal --follow` looks at a family
// across machines again and again while it lives. Counted reads every
// event of a being's life, which grows for as long as the being lives;
// Newest and TrustedPast read by the holders' indexes, as a takeover
// does (Recover), so that each look costs what is new since the last
// and the being's newest checkpoint, however long the being has lived.

// Newest is the being in dir as its family counts it by its commit
// record rec, read as a new holder reads it (Recover): its newest trusted
// checkpoint caught up with the trusted events after it. It is Counted's
// being without the trusted life, and it writes nothing.
func Newest(dir string, rec Record) (*state.Being, error) {
	// No holder's directory is newer than the largest token.
	held, err := Recover(dir, math.MaxUint64, rec)
	if err != nil {
		return nil, err
	}
	st := held.Checkpoint
	for _, e := range held.Events {
		st.Apply(e)
	}
	return st, nil
}

// TrustedPast is the part of the trusted life of the being in dir (by
// its commit record rec, as Counted gives it) past seq after, in order,
// and of that only the newest n events when n is not negative; through
// is the life's last seq (0 when nothing is trusted), what a reader has
// seen once it has read these. It reads every holder by its journal's
// ends (state.IndexHolding) and, whole, only the segments with events
// past what it returns from; a journal whose events carry no seq (the
// reference's) is read whole. It writes nothing.
//
// A live holder may append while it reads (what it appended past the
// ends read is left out, and read at the next look) or start a new
// segment (the one being read renamed, a new one begun): a read that
// fails is tried again, up to readTries times, before its error stands.
func TrustedPast(dir string, rec Record, after uint64, n int) (events []state.Event, through uint64, err error) {
	for try := 1; ; try++ {
		events, through, err = trustedPast(dir, rec, after, n)
		if err == nil || try == readTries {
			return events, through, err
		}
	}
}

// readTries is how many times TrustedPast reads before a failure stands.
const readTries = 3

func trustedPast(dir string, rec Record, after uint64, n int) (events []state.Event, through uint64, err error) {
	holdings, err := state.Holdings(dir)
	if err != nil {
		return nil, 0, err
	}
	read := make([]state.HoldingIndex, 0, len(holdings))
	spans := make([]Span, 0, len(holdings))
	for _, h := range holdings {
		x, err := state.IndexHolding(h)
		if errors.Is(err, state.ErrUnnumbered) {
			return trustedPastWhole(dir, rec, after, n)
		}
		if err != nil {
			return nil, 0, err
		}
		read = append(read, x)
		spans = append(spans, Span{Token: x.Token, First: x.First, Last: x.Last})
	}
	trust, err := TrustSpans(spans, rec)
	if err != nil {
		return nil, 0, fmt.Errorf("state: the journal of %s: %w", dir, err)
	}
	// The trusted events are one run of seqs ending at trust.Through.
	if n >= 0 && trust.Through > uint64(n) {
		after = max(after, trust.Through-uint64(n))
	}
	for _, x := range read {
		if !x.Wrote() || x.Last <= after || trust.Bound[x.Token] <= after {
			continue
		}
		past, err := x.ReadPast(after)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range past {
			if trust.Trusted(Written{Token: x.Token, Seq: e.Seq}) {
				events = append(events, e)
			}
		}
	}
	slices.SortFunc(events, func(a, b state.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return events, trust.Through, nil
}

// trustedPastWhole is TrustedPast by reading every holder's events whole.
func trustedPastWhole(dir string, rec Record, after uint64, n int) ([]state.Event, uint64, error) {
	all, written, err := ReadHoldings(dir)
	if err != nil {
		return nil, 0, err
	}
	trust, err := TrustJournal(written, rec)
	if err != nil {
		return nil, 0, fmt.Errorf("state: the journal of %s: %w", dir, err)
	}
	var events []state.Event
	for i, e := range all {
		if trust.Trusted(written[i]) && e.Seq > after {
			events = append(events, e)
		}
	}
	slices.SortFunc(events, func(a, b state.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	if n >= 0 && len(events) > n {
		events = events[len(events)-n:]
	}
	return events, trust.Through, nil
}
