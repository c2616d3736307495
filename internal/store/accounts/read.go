package accounts

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// Being is one being of a family as its state directory shows it.
type Being struct {
	ID       string // its directory's name
	Name     string
	Depth    int // 0 for the root
	StateDir string
	State    *state.Being // the checkpoint caught up with the journal
	// JournalOff is remaining − (starting − Σ debited + Σ credited − Σ
	// granted) over its whole journal: zero when its ledger is exact.
	JournalOff money.Amount
	Entry      Entry
}

// Family is a family read from its state directories.
type Family struct {
	Beings []Being
	Totals Totals
	// Unreadable lists the states that could not be read, as errors.
	Unreadable []error
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
func Read(dir string) (*Family, error) {
	f := &Family{}
	if err := f.read(dir, "", 0, true); err != nil {
		return nil, err
	}
	for _, b := range f.Beings {
		f.Totals.Add(b.Entry)
	}
	return f, nil
}

func (f *Family) read(dir, name string, depth int, root bool) error {
	b, err := readBeing(dir)
	if err != nil {
		if root {
			return err
		}
		f.Unreadable = append(f.Unreadable, fmt.Errorf("child %s: %w", name, err))
		return nil
	}
	b.Depth = depth
	b.Entry.Root = root
	self := len(f.Beings)
	f.Beings = append(f.Beings, *b)
	st := b.State
	for _, c := range st.Mind.Children {
		cdir := c.StateDir
		if !filepath.IsAbs(cdir) {
			cdir = filepath.Join(dir, "children", c.ID)
		}
		if err := f.read(cdir, c.Name, depth+1, false); err != nil {
			return err
		}
	}
	for _, g := range st.Grants {
		cdir := filepath.Join(dir, "children", g.Child.ID)
		if ok, err := state.Exists(cdir); err != nil || !ok {
			continue // in transit: counted with the parent
		}
		// Created, not recorded yet: the child holds the grant now.
		f.Beings[self].Entry.InTransit = f.Beings[self].Entry.InTransit.Sub(g.Amount)
		if err := f.read(cdir, g.Child.Name, depth+1, false); err != nil {
			return err
		}
	}
	return nil
}

// readBeing reads one state directory, trying again (a few times) when
// the journal changed under it.
func readBeing(dir string) (*Being, error) {
	var last error
	for range 5 {
		b, err := readOnce(dir)
		if !errors.Is(err, errMoved) {
			return b, err
		}
		last = err
	}
	return nil, last
}

var errMoved = errors.New("the journal moved on while it was read")

func readOnce(dir string) (*Being, error) {
	st, err := state.Load(dir)
	if err != nil {
		return nil, err
	}
	events, err := state.ReadAll(dir)
	if errors.Is(err, state.ErrTornLine) {
		err = nil // a write in progress, or a crash not repaired yet
	}
	if err != nil {
		return nil, err
	}
	if st.JournalSeq != nil {
		from := *st.JournalSeq
		next := from + 1
		for _, e := range events {
			if e.Seq <= from {
				continue
			}
			if e.Seq != next {
				return nil, errMoved
			}
			st.Apply(e)
			next++
		}
		if len(events) > 0 && events[len(events)-1].Seq < from {
			return nil, errMoved // the checkpoint is ahead of what was read
		}
	}
	t := state.Totals(events)
	b := &Being{
		ID: filepath.Base(dir), Name: st.Identity.Name, StateDir: dir, State: st,
		JournalOff: st.Budget.Remaining.Sub(st.Budget.Starting.Sub(t.Debited).Add(t.Credited).Sub(t.Granted)),
	}
	inTransit := money.Zero
	for _, g := range st.Grants {
		inTransit = inTransit.Add(g.Amount)
	}
	b.Entry = Entry{Budget: st.Budget, InTransit: inTransit}
	return b, nil
}
