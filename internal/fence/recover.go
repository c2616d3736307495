package fence

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
)

// ErrNoCheckpoint reports a being none of whose holders left a trusted
// checkpoint.
var ErrNoCheckpoint = errors.New("no trusted checkpoint")

// Recover is what the new holder of the being in dir, under token, loads
// (docs/cluster.md#the-next-holder), given the commit record rec it read
// after taking the lock. It reads the files of every earlier holder
// (state.Holdings), trusts their events by TrustJournal, and takes the
// newest checkpoint that includes no untrusted event; the events past it
// follow, in order. It writes nothing.
//
// A checkpoint includes only steps its holder applied, and a holder
// applies only accepted steps, so every checkpoint a holder wrote is
// within what it committed; the check is kept all the same, so that a
// checkpoint past what the journal trusts is skipped rather than loaded.
func Recover(dir string, token uint64, rec Record) (durable.Held, error) {
	holdings, err := state.Holdings(dir)
	if err != nil {
		return durable.Held{}, err
	}
	var (
		events  []state.Event
		written []Written
	)
	type candidate struct {
		token, seq uint64
		being      *state.Being
	}
	var checkpoints []candidate
	for _, h := range holdings {
		if h.Token >= token {
			if h.Token > token {
				return durable.Held{}, fmt.Errorf("state: %s was written under token %d, newer than this holder's %d", h.Dir, h.Token, token)
			}
			continue // this holder's own directory, from an attempt that wrote nothing
		}
		evs, err := state.ReadHolding(h)
		if err != nil {
			return durable.Held{}, err
		}
		for _, e := range evs {
			written = append(written, Written{Token: h.Token, Seq: e.Seq})
		}
		events = append(events, evs...)
		b, ok, err := state.LoadHolding(h)
		if err != nil {
			return durable.Held{}, err
		}
		if ok {
			if b.JournalSeq == nil && len(evs) > 0 {
				return durable.Held{}, fmt.Errorf("state: %s has no journal_seq: resume it once in a single process before clustering it", h.Dir)
			}
			checkpoints = append(checkpoints, candidate{token: h.Token, seq: b.Seq(), being: b})
		}
	}
	trust, err := TrustJournal(written, rec)
	if err != nil {
		return durable.Held{}, fmt.Errorf("state: the journal of %s: %w", dir, err)
	}

	// The newest checkpoint within what is trusted: at most Through, and
	// at most its own token's bound when that token wrote events.
	var best *candidate
	for i := range checkpoints {
		c := &checkpoints[i]
		// A holder that wrote no event has no bound: its checkpoint is
		// judged by what the others' journals trust.
		if bound, wrote := trust.Bound[c.token]; c.seq > trust.Through || wrote && c.seq > bound {
			continue
		}
		if best == nil || c.seq > best.seq || c.seq == best.seq && c.token > best.token {
			best = c
		}
	}
	if best == nil {
		return durable.Held{}, fmt.Errorf("state: %s: %w", dir, ErrNoCheckpoint)
	}

	held := durable.Held{Token: token, Checkpoint: best.being, Untrusted: trust.Untrusted}
	for i, e := range events {
		if e.Seq > best.seq && trust.Trusted(written[i]) {
			held.Events = append(held.Events, e)
		}
	}
	slices.SortFunc(held.Events, func(a, b state.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	held.Next = max(trust.Through, best.seq) + 1
	return held, nil
}

// ReadHoldings reads the journal of every holding of the being in dir
// (state.Holdings), oldest token first and each in order, leaving out a
// torn last line: the events, each tagged with its holder's token for
// TrustJournal. It writes nothing.
func ReadHoldings(dir string) ([]state.Event, []Written, error) {
	holdings, err := state.Holdings(dir)
	if err != nil {
		return nil, nil, err
	}
	var (
		events  []state.Event
		written []Written
	)
	for _, h := range holdings {
		evs, err := state.ReadHolding(h)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range evs {
			written = append(written, Written{Token: h.Token, Seq: e.Seq})
		}
		events = append(events, evs...)
	}
	return events, written, nil
}

// Counted is the being in dir as its family counts it by its commit
// record rec, for a reader such as `singularity status` (it writes
// nothing, and takes no lock): the newest trusted checkpoint caught up
// with the trusted events after it, and the trusted life, every event
// that counts, in order. A step written but never committed is in
// neither.
func Counted(dir string, rec Record) (*state.Being, []state.Event, error) {
	events, written, err := ReadHoldings(dir)
	if err != nil {
		return nil, nil, err
	}
	trust, err := TrustJournal(written, rec)
	if err != nil {
		return nil, nil, fmt.Errorf("state: the journal of %s: %w", dir, err)
	}
	var life []state.Event
	for i, e := range events {
		if trust.Trusted(written[i]) {
			life = append(life, e)
		}
	}
	// No holder's directory is newer than the largest token.
	held, err := Recover(dir, math.MaxUint64, rec)
	if err != nil {
		return nil, nil, err
	}
	st := held.Checkpoint
	for _, e := range held.Events {
		st.Apply(e)
	}
	return st, life, nil
}
