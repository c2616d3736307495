package main

import (
	"bufio"
	"container/heap"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
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
	Tail   *uint         `name:"tail" placeholder:"N" help:"Print only the newest N events of the history first (default 20 with --follow, the whole history without)."`
	Poll   time.Duration `name:"poll" default:"200ms" hidden:"" help:"How often --follow looks for new events."`
	Etcd   string        `name:"cluster-etcd" env:"SINGULARITY_CLUSTER_ETCD" help:"etcd of a family across processes: print only the events its commit records say were committed (docs/cluster.md#status)."`
	Family string        `name:"cluster-family" env:"SINGULARITY_CLUSTER_FAMILY" default:"family" help:"The family's name in etcd."`
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
	f     *journalview.Follower // nil for a family across processes
	// printed is the last seq printed, for a family across processes.
	printed uint64
	// wordsAt is when the being's last-words file was last written, as
	// last read: words are read again only once it changed.
	wordsAt time.Time
}

// lastWords is the line of the being's last words
// (docs/state.md#last-words) when they are newer than its journal as
// read so far (its last seq) and were not shown yet. Words that cannot
// be read are left out.
func (fb *followed) lastWords(last uint64) (journalview.Line, bool) {
	info, err := os.Stat(filepath.Join(fb.being.Dir, state.LastWordsFile))
	if err != nil || info.ModTime().Equal(fb.wordsAt) {
		return journalview.Line{}, false
	}
	fb.wordsAt = info.ModTime()
	w, err := state.ReadLastWords(fb.being.Dir)
	if err != nil || !w.Newer(last) {
		return journalview.Line{}, false
	}
	return journalview.LastWordsLine(*w), true
}

// entry is one event to print.
type entry struct {
	b *followed
	l journalview.Line
}

func (j *journalCmd) Run(e *env) error {
	if err := e.checkStateDir(j.StateDir); err != nil {
		return err
	}
	records, err := clusterRecords(e, j.Etcd, j.Family)
	if err != nil {
		return err
	}
	var src source = &onDisk{j: j, known: map[string]*followed{}, seen: map[string]journalview.Being{}}
	if records != nil {
		src = &committed{j: j, e: e, known: map[string]*followed{}, records: records}
	}
	fam, err := src.family()
	if err != nil {
		return err
	}
	if j.Being != "" && !slices.ContainsFunc(fam, j.wanted) {
		return fault.Errorf(fault.ClassConfiguration, "no being %q in the family at %s", j.Being, j.StateDir)
	}
	out := bufio.NewWriter(e.stdout)
	tail, first := j.tail(), true
	poll := func() error {
		lists, err := src.lines(first, tail)
		if err != nil {
			return err
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

// source is where the journal's lines come from: each being's files as
// one process wrote them (onDisk), or a family across processes as its
// commit records say (committed).
type source interface {
	// family lists the family's beings, parents first.
	family() ([]journalview.Being, error)
	// lines returns, for every wanted being in family order, its lines
	// not returned before: on the first call its newest tail (all with
	// tail < 0).
	lines(first bool, tail int) ([][]entry, error)
}

// onDisk follows each being's journal files (journalview.Follower).
type onDisk struct {
	j     *journalCmd
	fam   []journalview.Being
	seen  map[string]journalview.Being
	known map[string]*followed
	order []*followed
}

// family lists the family at the first look. It is refused first as
// status refuses it (a child record that points out of the family, a
// loop, a child whose state cannot be read): the same sentence, exit 4.
func (d *onDisk) family() ([]journalview.Being, error) {
	whole, err := accounts.Read(d.j.StateDir)
	if err == nil && len(whole.Unreadable) > 0 {
		err = whole.Unreadable[0]
	}
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "%w", err)
	}
	fam, err := journalview.FamilySeen(d.j.StateDir, d.seen)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read the family at %s: %w", d.j.StateDir, err)
	}
	d.fam = fam
	return fam, nil
}

func (d *onDisk) lines(first bool, tail int) ([][]entry, error) {
	if len(d.known) > 0 {
		// Children spawned since the last look (only their state.json
		// is read).
		if _, err := d.family(); err != nil {
			return nil, err
		}
	}
	for _, b := range d.fam {
		if _, ok := d.known[b.Dir]; ok || !d.j.wanted(b) {
			continue
		}
		fb := &followed{being: b, order: len(d.order), f: journalview.NewFollower(b.Dir)}
		d.known[b.Dir] = fb
		d.order = append(d.order, fb)
	}
	lists := make([][]entry, 0, len(d.order))
	for _, fb := range d.order {
		var lines []journalview.Line
		var err error
		if first && tail >= 0 {
			lines, err = fb.f.Tail(tail)
		} else {
			lines, err = fb.f.Next()
		}
		if err != nil {
			return nil, fault.Errorf(fault.ClassState, "cannot read the journal of %s: %w", fb.being.Name, err)
		}
		list := make([]entry, len(lines), len(lines)+1)
		for i, l := range lines {
			list[i] = entry{fb, l}
		}
		if l, ok := fb.lastWords(fb.f.Last()); ok {
			list = append(list, entry{fb, l})
		}
		lists = append(lists, list)
	}
	return lists, nil
}

// committed reads a family across processes (docs/cluster.md#status):
// each being's events from every holder's files, only those its commit
// record says were committed, in seq order. Each look reads the records
// again and, of each being, only the events past the last it saw
// (fence.TrustedPast, by the holders' indexes), so that following a
// family that has lived for weeks costs what is new since the last
// look. The family is read once, each being as its newest trusted
// checkpoint says (fence.Newest); a child spawned later joins it with
// the child_added event that records it.
type committed struct {
	j *journalCmd
	e *env
	// known is every being of the family, wanted or not (each one's
	// events are read for the children it spawns), by its own id.
	known map[string]*followed
	order []*followed
	// records are the commit records read at the start: the family is
	// read by them, and so are its events at the first look, which then
	// drops them.
	records map[string]fence.Record
}

func (c *committed) family() ([]journalview.Being, error) {
	records := c.records
	root := c.j.StateDir
	fam, err := accounts.ReadWith(root, func(dir string) (*state.Being, []state.Event, error) {
		st, err := fence.Newest(dir, records[member.BeingID(root, dir)])
		return st, nil, err
	})
	if err == nil && len(fam.Unreadable) > 0 {
		err = fam.Unreadable[0]
	}
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read the family at %s: %w", root, err)
	}
	out := make([]journalview.Being, 0, len(fam.Beings))
	for _, b := range fam.Beings {
		jb := journalview.Being{Dir: b.StateDir, ID: b.ID, AgentID: b.State.Identity.AgentID,
			Name: b.Name, Depth: b.Depth, Starting: b.State.Budget.Starting}
		c.add(jb)
		out = append(out, jb)
	}
	return out, nil
}

// add makes b a known being of the family, after those known before.
func (c *committed) add(b journalview.Being) {
	if _, ok := c.known[b.ID]; ok {
		return
	}
	fb := &followed{being: b, order: len(c.order)}
	c.known[b.ID] = fb
	c.order = append(c.order, fb)
}

// spawned adds the child that ev, a child_added event of parent's,
// records, unless it is known.
func (c *committed) spawned(parent *followed, ev state.Event) error {
	if _, ok := c.known[ev.Child.ID]; ok {
		return nil
	}
	dir, err := state.ChildDir(parent.being.Dir, *ev.Child)
	if err != nil {
		return err
	}
	b, err := journalview.ReadBeing(dir)
	if err != nil {
		return err
	}
	b.ID, b.Depth = ev.Child.ID, parent.being.Depth+1
	c.add(b)
	return nil
}

func (c *committed) lines(first bool, tail int) ([][]entry, error) {
	records := c.records
	c.records = nil
	if records == nil {
		var err error
		if records, err = clusterRecords(c.e, c.j.Etcd, c.j.Family); err != nil {
			return nil, err
		}
	}
	root := c.j.StateDir
	lists := make([][]entry, 0, len(c.order))
	// c.order grows as children are found.
	for i := 0; i < len(c.order); i++ {
		fb := c.order[i]
		wanted := c.j.wanted(fb.being)
		newest := -1
		switch {
		case first && !wanted:
			// The family read at the start holds its children so far.
			newest = 0
		case first:
			newest = tail
		}
		events, through, err := fence.TrustedPast(fb.being.Dir, records[member.BeingID(root, fb.being.Dir)], fb.printed, newest)
		if err != nil {
			return nil, fault.Errorf(fault.ClassState, "cannot read the journal of %s: %w", fb.being.Name, err)
		}
		fb.printed = max(fb.printed, through)
		var list []entry
		for _, ev := range events {
			if ev.Type == state.EventChildAdded && ev.Child != nil {
				if err := c.spawned(fb, ev); err != nil {
					return nil, fault.Errorf(fault.ClassState, "cannot read a child of %s: %w", fb.being.Name, err)
				}
			}
			if !wanted {
				continue
			}
			l, err := journalview.LineOf(ev)
			if err != nil {
				return nil, fault.Errorf(fault.ClassState, "cannot show the journal of %s: %w", fb.being.Name, err)
			}
			list = append(list, entry{fb, l})
		}
		if wanted {
			lists = append(lists, list)
		}
	}
	return lists, nil
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
