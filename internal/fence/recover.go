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
//
// Only what is replayed is decoded whole: the files are read first by
// each event's head (its seq is all the trust rule needs), and once the
// checkpoint is chosen the holders' files with events past it are read
// again, those events whole. A takeover reads every being's whole life,
// so this keeps its cost near that of reading heads.
func Recover(dir string, token uint64, rec Record) (durable.Held, error) {
	heads, err := readFiles(dir, token, math.MaxUint64, true)
	if err != nil {
		return durable.Held{}, err
	}
	held, _, err := heads.recover(token, rec)
	if err != nil {
		return durable.Held{}, err
	}
	f, err := heads.wholePast(held.Checkpoint.Seq())
	if err != nil {
		return durable.Held{}, err
	}
	held, _, err = f.recover(token, rec)
	return held, err
}

// files are what the holders of a being wrote, as read once: every
// event in order, tagged with its holder's token, and every checkpoint.
type files struct {
	dir         string
	read        []holdingRead
	events      []state.Event
	written     []Written
	checkpoints []checkpoint
}

// holdingRead is one holder's events as read.
type holdingRead struct {
	holding state.Holding
	events  []state.Event
}

// add appends the events read of holding h.
func (f *files) add(h state.Holding, evs []state.Event) {
	f.read = append(f.read, holdingRead{holding: h, events: evs})
	for _, e := range evs {
		f.written = append(f.written, Written{Token: h.Token, Seq: e.Seq})
	}
	f.events = append(f.events, evs...)
}

// wholePast is f with the events past seq past decoded whole: the
// holders' files that hold such an event are read again
// (state.ReadHoldingPast), the others kept as read.
func (f files) wholePast(past uint64) (files, error) {
	out := files{dir: f.dir, checkpoints: f.checkpoints}
	for _, r := range f.read {
		evs := r.events
		if slices.ContainsFunc(evs, func(e state.Event) bool { return e.Seq > past }) {
			var err error
			if evs, err = state.ReadHoldingPast(r.holding, past); err != nil {
				return files{}, err
			}
		}
		out.add(r.holding, evs)
	}
	return out, nil
}

type checkpoint struct {
	token, seq uint64
	being      *state.Being
}

// readFiles reads the files of every holder of the being in dir older
// than token (state.Holdings), leaving out a torn last line; a holder's
// directory newer than token is an error. The events with a seq up to
// past are decoded by their head only (state.ReadHoldingPast); the
// holders' checkpoints are loaded when checkpoints is set.
func readFiles(dir string, token, past uint64, checkpoints bool) (files, error) {
	holdings, err := state.Holdings(dir)
	if err != nil {
		return files{}, err
	}
	f := files{dir: dir}
	for _, h := range holdings {
		if h.Token >= token {
			if h.Token > token {
				return files{}, fmt.Errorf("state: %s was written under token %d, newer than this holder's %d", h.Dir, h.Token, token)
			}
			continue // this holder's own directory, from an attempt that wrote nothing
		}
		evs, err := state.ReadHoldingPast(h, past)
		if err != nil {
			return files{}, err
		}
		f.add(h, evs)
		if !checkpoints {
			continue
		}
		b, ok, err := state.LoadHolding(h)
		if err != nil {
			return files{}, err
		}
		if ok {
			if b.JournalSeq == nil && len(evs) > 0 {
				return files{}, fmt.Errorf("state: %s has no journal_seq: resume it once in a single process before clustering it", h.Dir)
			}
			f.checkpoints = append(f.checkpoints, checkpoint{token: h.Token, seq: b.Seq(), being: b})
		}
	}
	return f, nil
}

// recover judges the files by rec: what the holder of token loads, and
// the trusted life (every trusted event, in order).
func (f files) recover(token uint64, rec Record) (durable.Held, []state.Event, error) {
	trust, err := TrustJournal(f.written, rec)
	if err != nil {
		return durable.Held{}, nil, fmt.Errorf("state: the journal of %s: %w", f.dir, err)
	}

	// The newest checkpoint within what is trusted: at most Through, and
	// at most its own token's bound when that token wrote events.
	var best *checkpoint
	for i := range f.checkpoints {
		c := &f.checkpoints[i]
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
		return durable.Held{}, nil, fmt.Errorf("state: %s: %w", f.dir, ErrNoCheckpoint)
	}

	held := durable.Held{Token: token, Checkpoint: best.being, Untrusted: trust.Untrusted}
	var life []state.Event
	for i, e := range f.events {
		if !trust.Trusted(f.written[i]) {
			continue
		}
		life = append(life, e)
		if e.Seq > best.seq {
			held.Events = append(held.Events, e)
		}
	}
	slices.SortFunc(held.Events, func(a, b state.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	held.Next = max(trust.Through, best.seq) + 1
	return held, life, nil
}

// ReadHoldings reads the journal of every holding of the being in dir
// (state.Holdings), oldest token first and each in order, leaving out a
// torn last line: the events, each tagged with its holder's token for
// TrustJournal. It writes nothing.
func ReadHoldings(dir string) ([]state.Event, []Written, error) {
	f, err := readFiles(dir, math.MaxUint64, 0, false)
	if err != nil {
		return nil, nil, err
	}
	return f.events, f.written, nil
}

// Counted is the being in dir as its family counts it by its commit
// record rec, for a reader such as `singularity status` (it writes
// nothing, and takes no lock): the newest trusted checkpoint caught up
// with the trusted events after it, and the trusted life, every event
// that counts, in order. A step written but never committed is in
// neither.
func Counted(dir string, rec Record) (*state.Being, []state.Event, error) {
	// No holder's directory is newer than the largest token.
	f, err := readFiles(dir, math.MaxUint64, 0, true)
	if err != nil {
		return nil, nil, err
	}
	held, life, err := f.recover(math.MaxUint64, rec)
	if err != nil {
		return nil, nil, err
	}
	st := held.Checkpoint
	for _, e := range held.Events {
		st.Apply(e)
	}
	return st, life, nil
}
