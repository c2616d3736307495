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
// after taking the lock. It reads the files of the earlier holders
// (state.Holdings), newest first and only as far back as they decide
// the load, trusts their events by the trust rule (TrustSpans, which is
// TrustJournal), and takes the newest checkpoint that includes no
// untrusted event; the events past it follow, in order. It writes
// nothing.
//
// A checkpoint includes only steps its holder applied, and a holder
// applies only accepted steps, so every checkpoint a holder wrote is
// within what it committed; the check is kept all the same, so that a
// checkpoint past what the journal trusts is skipped rather than loaded.
//
// Its cost is that of what it replays, not of the being's whole life
// nor of how many holders it had: each holder's journal is known by the
// first and last line of its segments (state.IndexHolding), holders
// are read newest first only until those read decide the load (in a
// takeover, usually the last holder alone), and only the segments with
// events past the chosen checkpoint are read. A journal whose events
// carry no seq (the reference's) is read whole instead.
func Recover(dir string, token uint64, rec Record) (durable.Held, error) {
	held, err := recoverByIndex(dir, token, rec)
	if errors.Is(err, state.ErrUnnumbered) {
		return recoverWhole(dir, token, rec)
	}
	return held, err
}

// recoverWhole is Recover by reading every event of every holder whole:
// for a journal that cannot be indexed.
func recoverWhole(dir string, token uint64, rec Record) (durable.Held, error) {
	f, err := readFiles(dir, token, true)
	if err != nil {
		return durable.Held{}, err
	}
	held, _, err := f.recover(token, rec)
	return held, err
}

// recoverByIndex is Recover by the holders' indexes. It reads holders
// newest first and stops as soon as those read decide the load alone
// (enough), so that a being taken over many times costs about as much
// as one taken over once.
func recoverByIndex(dir string, token uint64, rec Record) (durable.Held, error) {
	holdings, err := earlierHoldings(dir, token)
	if err != nil {
		return durable.Held{}, err
	}
	var read []state.HoldingIndex // newest first
	var spans []Span
	var found []checkpoint
	for i := len(holdings) - 1; i >= 0; i-- {
		x, err := state.IndexHolding(holdings[i])
		if err != nil {
			return durable.Held{}, err
		}
		read = append(read, x)
		spans = append(spans, Span{Token: x.Token, First: x.First, Last: x.Last})
		c, ok, err := loadCheckpoint(x)
		if err != nil {
			return durable.Held{}, err
		}
		if ok {
			found = append(found, c)
		}
		if i == 0 {
			break
		}
		if trust, best, ok := enough(spans, found, rec); ok {
			return replay(token, read, trust, best)
		}
	}
	trust, err := TrustSpans(spans, rec)
	if err != nil {
		return durable.Held{}, fmt.Errorf("state: the journal of %s: %w", dir, err)
	}
	best, ok := newest(found, trust)
	if !ok {
		return durable.Held{}, fmt.Errorf("state: %s: %w", dir, ErrNoCheckpoint)
	}
	return replay(token, read, trust, best)
}

// enough reports whether the holders read so far (spans, newest first,
// and the checkpoints found in them) decide what the being loads
// without the older ones. Each of their tokens' bounds is what the
// whole journal gives it, since a bound depends only on the tokens
// after it. They decide when:
//
//   - some of them wrote events, the smallest seq of which is first, so
//     that every older token is trusted at most through first-1;
//   - one of their events is trusted (only the record's token and
//     older ones have trusted events), so that the last trusted seq is
//     theirs;
//   - a trusted checkpoint among them reaches first-1, so that every
//     event older holders are trusted for is in it, and no checkpoint
//     of theirs within their own token's bound is newer.
//
// Then the older holders are not read: whatever is wrong in them lies
// under the checkpoint loaded, and their untrusted events (a frozen
// holder's late lines) are not counted.
func enough(spans []Span, found []checkpoint, rec Record) (Trust, checkpoint, bool) {
	first := uint64(0)
	for _, s := range spans {
		if s.First > 0 && (first == 0 || s.First < first) {
			first = s.First
		}
	}
	if first == 0 {
		return Trust{}, checkpoint{}, false
	}
	trust, err := TrustSpans(spans, rec)
	if err != nil || trust.Through < first {
		return Trust{}, checkpoint{}, false
	}
	best, ok := newest(found, trust)
	if !ok || best.seq < first-1 {
		return Trust{}, checkpoint{}, false
	}
	return trust, best, true
}

// newest is the checkpoint of found (newest holder first) with the
// largest seq within trust, the newer holder's on a tie.
func newest(found []checkpoint, trust Trust) (checkpoint, bool) {
	var best *checkpoint
	for i := range found {
		if c := &found[i]; c.within(trust) && (best == nil || c.seq > best.seq) {
			best = c
		}
	}
	if best == nil {
		return checkpoint{}, false
	}
	return *best, true
}

// replay is what the holder of token loads: best, then the trusted
// events past it from the holders read.
func replay(token uint64, read []state.HoldingIndex, trust Trust, best checkpoint) (durable.Held, error) {
	held := durable.Held{Token: token, Checkpoint: best.being, Untrusted: trust.Untrusted}
	for _, x := range read {
		if !x.Wrote() || x.Last <= best.seq || trust.Bound[x.Token] <= best.seq {
			continue
		}
		events, err := x.ReadPast(best.seq)
		if err != nil {
			return durable.Held{}, err
		}
		for _, e := range events {
			if trust.Trusted(Written{Token: x.Token, Seq: e.Seq}) {
				held.Events = append(held.Events, e)
			}
		}
	}
	slices.SortFunc(held.Events, func(a, b state.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	held.Next = max(trust.Through, best.seq) + 1
	return held, nil
}

// earlierHoldings lists the holdings of the being in dir older than
// token; a holder's directory newer than token is an error, and token's
// own (from an attempt that wrote nothing) is left out.
func earlierHoldings(dir string, token uint64) ([]state.Holding, error) {
	holdings, err := state.Holdings(dir)
	if err != nil {
		return nil, err
	}
	var out []state.Holding
	for _, h := range holdings {
		if h.Token > token {
			return nil, fmt.Errorf("state: %s was written under token %d, newer than this holder's %d", h.Dir, h.Token, token)
		}
		if h.Token < token {
			out = append(out, h)
		}
	}
	return out, nil
}

// loadCheckpoint loads the state.json the holder of x wrote; ok is false
// when it wrote none.
func loadCheckpoint(x state.HoldingIndex) (checkpoint, bool, error) {
	b, ok, err := state.LoadHolding(x.Holding)
	if err != nil || !ok {
		return checkpoint{}, false, err
	}
	if b.JournalSeq == nil && x.Wrote() {
		return checkpoint{}, false, errNoJournalSeq(x.Dir)
	}
	return checkpoint{token: x.Token, seq: b.Seq(), being: b}, true, nil
}

// errNoJournalSeq refuses a holder's checkpoint that does not say how
// far its journal it includes.
func errNoJournalSeq(dir string) error {
	return fmt.Errorf("state: %s has no journal_seq: resume it once in a single process before clustering it", dir)
}

// files are what the holders of a being wrote, as read once: every
// event in order, tagged with its holder's token, and every checkpoint.
type files struct {
	dir         string
	events      []state.Event
	written     []Written
	checkpoints []checkpoint
}

// add appends the events read of holding h.
func (f *files) add(h state.Holding, evs []state.Event) {
	for _, e := range evs {
		f.written = append(f.written, Written{Token: h.Token, Seq: e.Seq})
	}
	f.events = append(f.events, evs...)
}

type checkpoint struct {
	token, seq uint64
	being      *state.Being
}

// within reports whether c includes only trusted events: it is at most
// Through, and at most its own token's bound when that token wrote
// events. A holder that wrote no event has no bound: its checkpoint is
// judged by what the others' journals trust.
func (c checkpoint) within(trust Trust) bool {
	bound, wrote := trust.Bound[c.token]
	return c.seq <= trust.Through && (!wrote || c.seq <= bound)
}

// readFiles reads the files of every holder of the being in dir older
// than token (state.Holdings), every event whole and leaving out a torn
// last line; a holder's directory newer than token is an error. The
// holders' checkpoints are loaded when checkpoints is set.
func readFiles(dir string, token uint64, checkpoints bool) (files, error) {
	holdings, err := earlierHoldings(dir, token)
	if err != nil {
		return files{}, err
	}
	f := files{dir: dir}
	for _, h := range holdings {
		evs, err := state.ReadHolding(h)
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
				return files{}, errNoJournalSeq(h.Dir)
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
		if !c.within(trust) {
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
	f, err := readFiles(dir, math.MaxUint64, false)
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
	f, err := readFiles(dir, math.MaxUint64, true)
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
