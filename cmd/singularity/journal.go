package main

import (
	"bufio"
	"container/heap"
	"io"
	"math"
	"slices"
	"time"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/supervision/fault"
)

// journalCmd prints a family's journal events in time order
// (docs/state.md#reading-the-journal), read-only and safe while `run` runs.
type journalCmd struct {
	StateDir string `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" help:"The root being's state directory."`
	Being    string `name:"being" help:"Only this being (its name or its own id)."`
	Follow   bool   `name:"follow" short:"f" help:"Keep printing new events until Ctrl-C."`
	Format   string `name:"format" default:"text" enum:"text,json" help:"Output: text (<time> <being> <type> <fields>) or json (the journal's own objects with being and being_id first)."`
	// Tail is nil when --tail is not given: the whole history, or the
	// newest defaultFollowTail events with --follow.
	Tail *uint         `name:"tail" placeholder:"N" help:"Print only the newest N events of the history first (default 20 with --follow, the whole history without)."`
	Poll time.Duration `name:"poll" default:"200ms" hidden:"" help:"How often --follow looks for new events."`
}

// defaultFollowTail is how much of the history --follow prints first
// without --tail.
const defaultFollowTail = 20

// tail is how many events of the history to print first; -1 for all.
func (j *journalCmd) tail() int {
	switch {
	case j.Tail != nil:
		return int(min(*j.Tail, uint(math.MaxInt32)))
	case j.Follow:
		return defaultFollowTail
	default:
		return -1
	}
}

// followed is one being's follower and its place in the family order.
type followed struct {
	being journalview.Being
	order int
	f     *journalview.Follower
}

// entry is one event to print.
type entry struct {
	b *followed
	l journalview.Line
}

func (j *journalCmd) Run(e *env) error {
	fam, err := j.family()
	if err != nil {
		return err
	}
	if j.Being != "" && !slices.ContainsFunc(fam, j.wanted) {
		return fault.Errorf(fault.ClassConfiguration, "no being %q in the family at %s", j.Being, j.StateDir)
	}
	out := bufio.NewWriter(e.stdout)
	seen := map[string]journalview.Being{}
	known := map[string]*followed{}
	var order []*followed
	tail, first := j.tail(), true
	poll := func() error {
		if len(known) > 0 {
			// Children spawned since the last look (only their
			// state.json is read).
			if fam, err = j.familySeen(seen); err != nil {
				return err
			}
		}
		for _, b := range fam {
			if _, ok := known[b.Dir]; ok || !j.wanted(b) {
				continue
			}
			fb := &followed{being: b, order: len(order), f: journalview.NewFollower(b.Dir)}
			known[b.Dir] = fb
			order = append(order, fb)
		}
		lists := make([][]entry, 0, len(order))
		for _, fb := range order {
			var lines []journalview.Line
			var err error
			if first && tail >= 0 {
				lines, err = fb.f.Tail(tail)
			} else {
				lines, err = fb.f.Next()
			}
			if err != nil {
				return fault.Errorf(fault.ClassState, "cannot read the journal of %s: %w", fb.being.Name, err)
			}
			list := make([]entry, len(lines))
			for i, l := range lines {
				list[i] = entry{fb, l}
			}
			lists = append(lists, list)
		}
		batch := merge(lists)
		if first && tail >= 0 && len(batch) > tail {
			batch = batch[len(batch)-tail:]
		}
		first = false
		for _, en := range batch {
			j.write(out, en)
		}
		return out.Flush()
	}
	if err := poll(); err != nil {
		return err
	}
	if !j.Follow {
		return nil
	}
	tick := time.NewTicker(max(j.Poll, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return nil
		case <-tick.C:
			if err := poll(); err != nil {
				return err
			}
		}
	}
}

// merge interleaves the beings' lines (each list one being's, in family
// order) in time order, while each being's own lines keep their journal
// order, which is seq order: a line stamped earlier than the one before it
// (a clock set back) waits for it rather than jumping ahead. Lines at the
// same instant keep the family's order, parents first.
func merge(lists [][]entry) []entry {
	total := 0
	h := make(heads, 0, len(lists))
	for _, l := range lists {
		if len(l) > 0 {
			h = append(h, l)
			total += len(l)
		}
	}
	heap.Init(&h)
	out := make([]entry, 0, total)
	for h.Len() > 0 {
		out = append(out, h[0][0])
		if h[0] = h[0][1:]; len(h[0]) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return out
}

// heads is a heap of the beings' remaining lines, by their first line.
type heads [][]entry

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, k int) bool {
	a, b := h[i][0], h[k][0]
	if c := a.l.Head.At.Compare(b.l.Head.At.Time); c != 0 {
		return c < 0
	}
	return a.b.order < b.b.order
}
func (h heads) Swap(i, k int) { h[i], h[k] = h[k], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.([]entry)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (j *journalCmd) family() ([]journalview.Being, error) { return j.familySeen(nil) }

func (j *journalCmd) familySeen(seen map[string]journalview.Being) ([]journalview.Being, error) {
	fam, err := journalview.FamilySeen(j.StateDir, seen)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read the family at %s: %w", j.StateDir, err)
	}
	return fam, nil
}

// wanted applies --being.
func (j *journalCmd) wanted(b journalview.Being) bool {
	return j.Being == "" || b.ID == j.Being || b.Name == j.Being
}

func (j *journalCmd) write(w io.Writer, en entry) {
	if j.Format == "json" {
		_, _ = w.Write(journalview.JSON(en.b.being.Name, en.b.being.ID, en.l))
	} else {
		_, _ = io.WriteString(w, journalview.Text(en.b.being.Name, en.l))
	}
	_, _ = io.WriteString(w, "\n")
}
