package accounts

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// Being is one being of a family as its state directory shows it.
type Being struct {
	// ID is the being's own id: a child's is its directory's name (the
	// id spawn_child gave it), the root's its agent id.
	ID       string
	Name     string
	Depth    int // 0 for the root
	StateDir string
	State    *state.Being // the checkpoint caught up with the journal
	// JournalOff is remaining − (starting − Σ debited + Σ credited − Σ
	// granted) over its whole journal: zero when its ledger is exact.
	JournalOff money.Amount
	// Journal says what is wrong with the journal's numbering (a seq
	// repeated or missing: two runtimes wrote it, or a line was lost);
	// nil when its seqs run 1, 2, 3, … The ledger is not exact then,
	// whatever the sums say.
	Journal error
	// LastWords is set when State's status and status_reason are the
	// being's last words (docs/state.md#last-words): the end of its
	// life that storage would not let it journal, newer than its
	// journal.
	LastWords bool
	Entry     Entry
}

// Family is a family read from its state directories.
type Family struct {
	Beings []Being
	Totals Totals
	// Unreadable lists the states that could not be read, as errors.
	Unreadable []error
}

// Verdict is the family ledger in words: "not exact: <being>'s <problem>"
// when a being's journal is misnumbered, else Totals.Verdict ("exact",
// or "off by <amount>").
func (f *Family) Verdict() string {
	for _, b := range f.Beings {
		if b.Journal != nil {
			return "not exact: " + b.Name + "'s " + b.Journal.Error()
		}
	}
	return f.Totals.Verdict()
}

// Read reads the family rooted at dir without writing anything: each
// being's state.json caught up with its journal past the checkpoint,
// then its children, recursively — the recorded ones, and those of
// grants not recorded yet whose state exists (a grant whose child has no
// state yet is in transit). It is safe while the family runs: a torn
// last journal line (a write in progress) is left out, and a journal
// that moved on between reading the checkpoint and the journal is read
// again. The root's state must be readable; a child's that is not is
// listed in Unreadable.
func Read(dir string) (*Family, error) { return ReadWith(dir, nil) }

// Loader reads one being as a family across machines counts it
// (docs/cluster.md#status): its state, the newest trusted checkpoint
// caught up with the trusted events after it, and its trusted life,
// every event that counts, in order. Nothing else of its files counts.
type Loader func(dir string) (st *state.Being, life []state.Event, err error)

// ReadWith is Read with each being read by load; nil reads each state
// directory as a single process wrote it.
func ReadWith(dir string, load Loader) (*Family, error) {
	r := &reader{slots: make(chan struct{}, 2*runtime.GOMAXPROCS(0)), seen: map[fileID]bool{}, load: load}
	root := r.read(dir, "", 0, true)
	if root.err != nil {
		return nil, root.err
	}
	f := &Family{}
	root.flatten(f)
	for _, b := range f.Beings {
		f.Totals.Add(b.Entry)
	}
	return f, nil
}

// ReadBeing reads the being in dir alone, not its children, as ReadWith
// reads each being: by load, or with load nil as a single process wrote
// it. Its ID is its directory's name and its Depth 0.
func ReadBeing(dir string, load Loader) (*Being, error) {
	if load != nil {
		return readLoaded(dir, load)
	}
	return readBeing(dir)
}

// reader reads the beings of a family concurrently, a few at a time
// (reading is decoding JSON, so more than the cores would not help),
// each directory once: seen holds the directories read, by device and
// inode, so a family whose directories loop (a link, a bind mount) ends.
type reader struct {
	load  Loader // nil: readBeing
	slots chan struct{}
	mu    sync.Mutex
	seen  map[fileID]bool
}

type fileID struct{ dev, ino uint64 }

// visit records dir as read, refusing a directory read before and a
// child's that is a symbolic link (state.CheckChildDir; the root's may be
// one).
func (r *reader) visit(dir string, child bool) error {
	if child {
		if err := state.CheckChildDir(dir); err != nil {
			return err
		}
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil // readBeing reports it
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	id := fileID{uint64(st.Dev), st.Ino}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[id] {
		return fmt.Errorf("state directory %s was read already: the family loops", dir)
	}
	r.seen[id] = true
	return nil
}

// node is one being read, or why it could not be, and its children in
// the order of its records then its pending grants.
type node struct {
	being *Being
	name  string
	err   error
	// named is set when err names the child already (a refused record:
	// state.ChildDir's "child <name>: …").
	named    bool
	children []*node
}

// flatten lists the tree depth first, parents before their children,
// as the table shows it. A child that could not be read is listed in
// Unreadable as one state fault naming it once: "child <name>: <why>".
func (n *node) flatten(f *Family) {
	if n.err != nil {
		err := n.err
		if !n.named {
			err = fault.Errorf(fault.ClassState, "child %s: %w", n.name, err)
		}
		f.Unreadable = append(f.Unreadable, err)
		return
	}
	f.Beings = append(f.Beings, *n.being)
	for _, c := range n.children {
		c.flatten(f)
	}
}

func (r *reader) read(dir, name string, depth int, root bool) *node {
	if err := r.visit(dir, !root); err != nil {
		return &node{name: name, err: err}
	}
	r.slots <- struct{}{}
	var (
		b   *Being
		err error
	)
	b, err = ReadBeing(dir, r.load)
	<-r.slots
	n := &node{being: b, name: name, err: err}
	if err != nil {
		return n
	}
	b.Depth = depth
	b.Entry.Root = root
	if root {
		b.ID = b.State.Identity.AgentID
	}
	type child struct {
		dir, name string
		err       error // the record is refused, never followed
	}
	var kids []child
	for _, c := range b.State.Mind.Children {
		cdir, err := state.ChildDir(dir, c)
		kids = append(kids, child{cdir, c.Name, err})
	}
	for _, g := range b.State.Grants {
		cdir, err := state.ChildDir(dir, g.Child)
		if err != nil {
			kids = append(kids, child{"", g.Child.Name, err})
			continue
		}
		if ok, err := state.Exists(cdir); err != nil || !ok {
			continue // in transit: counted with the parent
		}
		// Created, not recorded yet: the child holds the grant now.
		b.Entry.InTransit = b.Entry.InTransit.Sub(g.Amount)
		kids = append(kids, child{dir: cdir, name: g.Child.Name})
	}
	n.children = make([]*node, len(kids))
	var wg sync.WaitGroup
	for i, k := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k.err != nil {
				n.children[i] = &node{name: k.name, err: k.err, named: true}
				return
			}
			n.children[i] = r.read(k.dir, k.name, depth+1, false)
		}()
	}
	wg.Wait()
	return n
}

// readBeing reads one state directory, trying again (a few times) when
// the journal changed under it. A misnumbered journal is read again too
// (a rotation while it was read looks the same) before it is reported.
func readBeing(dir string) (*Being, error) {
	var last error
	var misnumbered *Being
	for range 5 {
		b, err := readOnce(dir)
		if err == nil && b.Journal != nil {
			misnumbered = b
			continue
		}
		if !errors.Is(err, errMoved) {
			return b, err
		}
		last = err
	}
	if misnumbered != nil {
		return misnumbered, nil
	}
	return nil, last
}

// numbering reports a journal whose seqs do not run 1, 2, 3, … in
// order: one repeated or going back, or one missing.
func numbering(events []state.Event) error {
	next := uint64(1)
	for _, e := range events {
		switch {
		case e.Seq == next:
			next++
		case e.Seq < next:
			return fmt.Errorf("journal repeats seq %d after seq %d", e.Seq, next-1)
		default:
			return fmt.Errorf("journal lacks seq %d (seq %d follows seq %d)", next, e.Seq, next-1)
		}
	}
	return nil
}

var errMoved = errors.New("the journal moved on while it was read")

func readOnce(dir string) (*Being, error) {
	st, err := state.Load(dir)
	if err != nil {
		return nil, err
	}
	// Only the money of the events the checkpoint holds is needed.
	past := uint64(math.MaxUint64)
	if st.JournalSeq != nil {
		past = *st.JournalSeq
	}
	events, err := state.ReadAllPast(dir, past)
	if errors.Is(err, state.ErrTornLine) {
		err = nil // a write in progress, or a crash not repaired yet
	}
	if err != nil {
		return nil, err
	}
	misnumbered := numbering(events)
	if st.JournalSeq != nil {
		from := *st.JournalSeq
		next := from + 1
		for _, e := range events {
			if e.Seq <= from {
				continue
			}
			if e.Seq != next && misnumbered == nil {
				return nil, errMoved
			}
			// A misnumbered journal is applied as it stands: its
			// ledger is reported not exact (readBeing reads it again
			// first, in case it moved on meanwhile).
			st.Apply(e)
			next = e.Seq + 1
		}
		if len(events) > 0 && events[len(events)-1].Seq < from && misnumbered == nil {
			return nil, errMoved // the checkpoint is ahead of what was read
		}
	}
	return newBeing(dir, st, events, misnumbered), nil
}

// readLoaded reads one being by load.
func readLoaded(dir string, load Loader) (*Being, error) {
	st, life, err := load(dir)
	if err != nil {
		return nil, err
	}
	return newBeing(dir, st, life, numbering(life)), nil
}

// newBeing is the being in dir whose state is st and whose journal is
// events (misnumbered says how their numbering is wrong, if it is). Its
// last words newer than its journal are its status and reason; words
// that cannot be read are left out.
func newBeing(dir string, st *state.Being, events []state.Event, misnumbered error) *Being {
	var last uint64
	if n := len(events); n > 0 {
		last = events[n-1].Seq
	}
	spoke := state.HeedLastWords(dir, st, last)
	t := state.Totals(events)
	b := &Being{
		ID: filepath.Base(dir), Name: st.Identity.Name, StateDir: dir, State: st,
		JournalOff: st.Budget.Remaining.Sub(st.Budget.Starting.Add(t.Funded).Sub(t.Debited).Add(t.Credited).Sub(t.Granted)),
		Journal:    misnumbered, LastWords: spoke,
	}
	inTransit := money.Zero
	for _, g := range st.Grants {
		inTransit = inTransit.Add(g.Amount)
	}
	b.Entry = Entry{Budget: st.Budget, InTransit: inTransit}
	return b
}
