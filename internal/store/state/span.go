package state

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"

	"github.com/wisent/singularity/supervision/fault"
)

// ErrUnnumbered reports a journal line without a seq (the reference's
// events count by position): such a journal can be indexed only by
// reading it whole.
var ErrUnnumbered = errors.New("an event without a seq")

// HoldingIndex is one holder's journal known by its ends: the seqs of
// its events run from First through Last, one after another, as its one
// writer numbered them. First is 0 when it wrote no event. Each segment
// is known by its first and last whole line, so that a reader can find
// the events past a seq without reading the rest.
type HoldingIndex struct {
	Holding
	First, Last uint64
	segs        []segmentSpan
}

// segmentSpan is one journal segment with a whole line: the seqs of its
// first and last ones, and whether it is the newest segment (the only
// one that may end in a torn line).
type segmentSpan struct {
	path        string
	first, last uint64
	newest      bool
}

// Wrote reports whether the holder wrote an event.
func (x HoldingIndex) Wrote() bool { return x.First > 0 }

// IndexHolding reads the first and the last whole line of each of the
// holder's journal segments. The segments must follow one another (each
// begins at the seq after the one before it ends) and only the newest
// may end in a torn line, which is left out as ReadHolding leaves it.
// The lines between are taken to be numbered one after another, which
// one writer does; ReadPast checks it of every event it reads. A line
// without a seq is ErrUnnumbered.
func IndexHolding(h Holding) (HoldingIndex, error) {
	paths, err := Segments(h.Dir)
	if err != nil {
		return HoldingIndex{}, err
	}
	x := HoldingIndex{Holding: h}
	for i, path := range paths {
		newest := i == len(paths)-1
		first, last, torn, err := segmentEnds(path)
		if err != nil {
			return HoldingIndex{}, err
		}
		if torn && !newest {
			return HoldingIndex{}, fault.Errorf(fault.ClassState, "journal %s: %w", path, ErrTornLine)
		}
		if first == 0 {
			continue // no whole line
		}
		switch {
		case last < first:
			return HoldingIndex{}, fault.Errorf(fault.ClassState, "journal %s ends at seq %d before it begins at seq %d", path, last, first)
		case x.Wrote() && first != x.Last+1:
			return HoldingIndex{}, fault.Errorf(fault.ClassState, "journal %s begins at seq %d after seq %d of %s",
				path, first, x.Last, filepath.Base(x.segs[len(x.segs)-1].path))
		}
		if !x.Wrote() {
			x.First = first
		}
		x.Last = last
		x.segs = append(x.segs, segmentSpan{path: path, first: first, last: last, newest: newest})
	}
	return x, nil
}

// ReadPast reads whole the holder's events with a seq past past, in
// order, from the segments that hold them; a segment's events up to past
// are decoded by their head only. The events read must be numbered one
// after another through Last. Events its writer appended after the index
// was read (a live holder's) are left out: the index ends at Last.
func (x HoldingIndex) ReadPast(past uint64) ([]Event, error) {
	var out []Event
	next := max(past+1, x.First)
	for _, s := range x.segs {
		if s.last <= past {
			continue
		}
		events, err := readJournal(s.path, past)
		if err != nil && !(s.newest && errors.Is(err, ErrTornLine)) {
			return nil, err
		}
		for _, e := range events {
			if e.Seq <= past {
				continue
			}
			if e.Seq > x.Last && e.Seq == next {
				break // appended since the index was read
			}
			if e.Seq != next {
				return nil, fault.Errorf(fault.ClassState, "journal %s: seq %d where seq %d was due", s.path, e.Seq, next)
			}
			out = append(out, e)
			next++
		}
	}
	if x.Last > past && next != x.Last+1 {
		return nil, fault.Errorf(fault.ClassState, "journal of %s: ends at seq %d, and its last line is seq %d", x.Dir, next-1, x.Last)
	}
	return out, nil
}

// segmentEnds reads the seqs of the first and the last whole line of the
// journal segment at path (0, 0 when it has none) and whether a torn line
// follows its last newline.
func segmentEnds(path string) (first, last uint64, torn bool, err error) {
	f, err := OpenRegular(path, "journal")
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	fail := func(err error) (uint64, uint64, bool, error) {
		return 0, 0, false, fault.Errorf(fault.ClassState, "journal %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	end, err := lastNewline(f, info.Size())
	if err != nil {
		return fail(err)
	}
	torn = end < info.Size()
	if end == 0 {
		return 0, 0, torn, nil
	}
	line, err := NewLineReader(io.NewSectionReader(f, 0, end), MaxLine).ReadLine()
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	if first, err = seqOf(line); err != nil {
		return fail(err)
	}
	start, err := lastNewline(f, end-1)
	if err != nil {
		return fail(err)
	}
	line = make([]byte, end-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return fail(err)
	}
	if last, err = seqOf(line); err != nil {
		return fail(err)
	}
	return first, last, torn, nil
}

// seqOf is the seq of a whole journal line, validated as readJournal
// validates it.
func seqOf(line []byte) (uint64, error) {
	if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '{' {
		return 0, errNotObject
	}
	h, err := readHead(line)
	if err != nil {
		return 0, err
	}
	if h.Seq == 0 {
		return 0, ErrUnnumbered
	}
	return h.Seq, nil
}
