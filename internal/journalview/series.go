package journalview

import (
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// EventEndowmentGranted is the parent's event of a funded child (stage 2,
// docs/money.md): the amount leaves the parent's balance.
const EventEndowmentGranted = "endowment_granted"

// Point is the balance after one event that moved it.
type Point struct {
	Seq     uint64     `json:"seq"`
	At      state.Time `json:"at"`
	Balance string     `json:"balance"` // exact decimal
}

// Series is a being's balance over its life, drawn from its journal: the
// starting balance, less every cost_debited and endowment_granted, plus
// every revenue_credited. It is kept up to date incrementally by Update
// and thinned to at most a fixed number of points (every other point is
// dropped when it grows past it; the first and the newest stay). Not safe
// for concurrent use.
type Series struct {
	f       *Follower // nil for NewSeriesOf
	seq     uint64    // the last seq taken
	balance money.Amount
	points  []Point
	max     int
}

// NewSeries returns the series of b with at most max points (at least 8).
func NewSeries(b Being, max int) *Series {
	max = maxInt(max, 8)
	s := &Series{f: NewFollower(b.Dir), balance: b.Starting, max: max}
	s.points = append(s.points, Point{Balance: b.Starting.String()})
	return s
}

// Update reads what the journal gained and returns the points so far
// (the caller must not change them).
func (s *Series) Update() ([]Point, error) {
	lines, err := s.f.Next()
	return s.Add(lines), err
}

// NewSeriesOf is NewSeries for a caller that reads b's lines itself and
// hands them to Add (a family across processes, whose committed events
// are not one journal file).
func NewSeriesOf(b Being, max int) *Series {
	s := NewSeries(b, max)
	s.f = nil
	return s
}

// Add takes the lines after those already taken, in seq order, and
// returns the points so far (the caller must not change them).
func (s *Series) Add(lines []Line) []Point {
	for _, l := range lines {
		h := l.Head
		s.seq = h.Seq
		switch h.Type {
		case state.EventCostDebited, EventEndowmentGranted:
			s.balance = s.balance.Sub(h.Amount)
		case state.EventRevenueCredited:
			s.balance = s.balance.Add(h.Amount)
		default:
			if len(s.points) == 1 && s.points[0].Seq == 0 && h.Type == state.EventStarted {
				s.points[0].At = h.At
			}
			continue
		}
		s.points = append(s.points, Point{Seq: h.Seq, At: h.At, Balance: s.balance.String()})
		if len(s.points) > s.max {
			s.thin()
		}
	}
	return s.points
}

// thin keeps every other point, the first and the last.
func (s *Series) thin() {
	last := s.points[len(s.points)-1]
	kept := s.points[:0]
	for i := 0; i < len(s.points)-1; i += 2 {
		kept = append(kept, s.points[i])
	}
	s.points = append(kept, last)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Seq is the seq of the last line taken (0 before any).
func (s *Series) Seq() uint64 { return s.seq }
