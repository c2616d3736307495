package fence

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Written is one journaled event as the trust rule sees it: its seq and
// the token of the segment it was written to (0: written before the
// family was clustered, by a single process).
type Written struct {
	Token uint64
	Seq   uint64
}

// Trust is how far a journal is trusted.
type Trust struct {
	// Through is the last trusted seq (0 when nothing is). The trusted
	// events are one run of seqs ending here, each once.
	Through uint64
	// Bound is the last seq trusted under each token of the journal
	// (0: none of that token's events).
	Bound map[uint64]uint64
	// Untrusted counts the events past their token's bound.
	Untrusted int
}

// Trusted reports whether w is a trusted event of the journal.
func (t Trust) Trusted(w Written) bool {
	b, ok := t.Bound[w.Token]
	return ok && w.Seq <= b
}

// TrustJournal says how far a journal is trusted, given the events it
// holds (in any order) and the being's commit record. It is the rule "a
// journal written under an old token is trusted only up to what was
// committed":
//
//   - the events of the record's token are trusted up to the record's
//     seq;
//   - the events of a newer token than the record's are not trusted: no
//     step of theirs was ever committed;
//   - the events of an older token are trusted up to the seq before the
//     first event of any newer token in the journal: a later holder
//     started right after what was committed when it took the lock, and
//     the older holder could commit nothing after that;
//   - with no record (token 0), the events written before clustering
//     (token 0) are trusted the same way, up to the first event of any
//     token.
//
// It is ErrJournalBehind when the journal does not reach the record's
// seq, and ErrJournalGap when the trusted events skip or repeat a seq.
func TrustJournal(journal []Written, rec Record) (Trust, error) {
	first := map[uint64]uint64{} // each token's smallest seq
	for _, w := range journal {
		if s, ok := first[w.Token]; !ok || w.Seq < s {
			first[w.Token] = w.Seq
		}
	}
	tokens := make([]uint64, 0, len(first))
	for token := range first {
		tokens = append(tokens, token)
	}
	slices.Sort(tokens)

	t := Trust{Bound: make(map[uint64]uint64, len(tokens))}
	for i, token := range tokens {
		switch {
		case token > rec.Token:
			t.Bound[token] = 0
		case token == rec.Token && token > 0:
			t.Bound[token] = rec.Seq
		default:
			bound := uint64(math.MaxUint64)
			for _, later := range tokens[i+1:] {
				bound = min(bound, max(first[later], 1)-1)
			}
			t.Bound[token] = bound
		}
	}

	var trusted []uint64
	for _, w := range journal {
		if t.Trusted(w) {
			trusted = append(trusted, w.Seq)
		} else {
			t.Untrusted++
		}
	}
	slices.Sort(trusted)
	for i := 1; i < len(trusted); i++ {
		if trusted[i] != trusted[i-1]+1 {
			return t, fmt.Errorf("seq %d follows seq %d: %w", trusted[i], trusted[i-1], ErrJournalGap)
		}
	}
	if n := len(trusted); n > 0 {
		t.Through = trusted[n-1]
	}
	if rec.Token > 0 && t.Through < rec.Seq {
		return t, fmt.Errorf("the journal is trusted through seq %d, and seq %d was committed under token %d: %w",
			t.Through, rec.Seq, rec.Token, ErrJournalBehind)
	}
	return t, nil
}

// Span is the events one holder wrote, as the trust rule sees them: the
// seqs First through Last under Token, one after another (one writer
// numbers its events so). First is 0 when it wrote none.
type Span struct {
	Token       uint64
	First, Last uint64
}

// TrustSpans is TrustJournal for a journal known by its holders' spans,
// each token's events one run of seqs: the same Trust and the same
// refusals, at a cost that does not grow with the events.
func TrustSpans(spans []Span, rec Record) (Trust, error) {
	var wrote []Span
	for _, s := range spans {
		if s.First > 0 {
			wrote = append(wrote, s)
		}
	}
	slices.SortFunc(wrote, func(a, b Span) int { return cmp.Compare(a.Token, b.Token) })

	t := Trust{Bound: make(map[uint64]uint64, len(wrote))}
	var trusted []Span // each token's trusted run
	for i, s := range wrote {
		switch {
		case s.Token > rec.Token:
			t.Bound[s.Token] = 0
		case s.Token == rec.Token && s.Token > 0:
			t.Bound[s.Token] = rec.Seq
		default:
			bound := uint64(math.MaxUint64)
			for _, later := range wrote[i+1:] {
				bound = min(bound, later.First-1)
			}
			t.Bound[s.Token] = bound
		}
		last := min(s.Last, t.Bound[s.Token])
		if last < s.First {
			t.Untrusted += int(s.Last - s.First + 1)
			continue
		}
		t.Untrusted += int(s.Last - last)
		trusted = append(trusted, Span{Token: s.Token, First: s.First, Last: last})
	}

	slices.SortFunc(trusted, func(a, b Span) int { return cmp.Compare(a.First, b.First) })
	for i := 1; i < len(trusted); i++ {
		prev, s := trusted[i-1], trusted[i]
		switch {
		case s.First <= prev.Last:
			return t, fmt.Errorf("seq %d follows seq %d: %w", s.First, s.First, ErrJournalGap)
		case s.First != prev.Last+1:
			return t, fmt.Errorf("seq %d follows seq %d: %w", s.First, prev.Last, ErrJournalGap)
		}
	}
	if n := len(trusted); n > 0 {
		t.Through = trusted[n-1].Last
	}
	if rec.Token > 0 && t.Through < rec.Seq {
		return t, fmt.Errorf("the journal is trusted through seq %d, and seq %d was committed under token %d: %w",
			t.Through, rec.Seq, rec.Token, ErrJournalBehind)
	}
	return t, nil
}
