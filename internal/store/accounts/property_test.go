package accounts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// simBeing is one being of a simulated family: its directory, its store
// and journal, and its state as the being holds it in memory.
type simBeing struct {
	dir     string
	store   *state.Store
	journal *state.Journal
	st      *state.Being
}

// simFamily lives on real state directories and follows the runtime's
// rules for money (docs/money.md): every step is journaled and only then
// applied; a grant is a step of its own, then the child's state is
// created with the grant as its starting balance, then the child is
// recorded. A crash forgets everything in memory and any step not yet
// written; the restart loads each being from its checkpoint and journal
// and repairs what a crash left between a grant and its child.
type simFamily struct {
	t      *rapid.T
	root   string
	beings []*simBeing
	at     time.Time
	ids    int
}

func (f *simFamily) now() state.Time {
	f.at = f.at.Add(time.Second)
	return state.Time{Time: f.at}
}

func (f *simFamily) fatal(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf(format, args...)
}

// open loads the being in dir as a restart does: the checkpoint, then
// every journal event after it.
func (f *simFamily) open(dir string) *simBeing {
	store, err := state.Open(dir)
	if err != nil {
		f.fatal("open %s: %v", dir, err)
	}
	st, err := store.Load()
	if err != nil {
		f.fatal("load %s: %v", dir, err)
	}
	j, err := store.OpenJournal(f.now(), st.Cycle)
	if err != nil {
		f.fatal("journal %s: %v", dir, err)
	}
	events, err := state.ReadAll(dir)
	if err != nil {
		f.fatal("read %s: %v", dir, err)
	}
	for _, e := range events {
		if e.Seq > st.Seq() {
			st.Apply(e)
		}
	}
	return &simBeing{dir: dir, store: store, journal: j, st: st}
}

// step journals events for b, then applies them.
func (f *simFamily) step(b *simBeing, events ...state.Event) {
	for i := range events {
		events[i].At = f.now()
	}
	written, err := b.journal.AppendStep(events)
	if err != nil {
		f.fatal("append: %v", err)
	}
	for _, e := range written {
		b.st.Apply(e)
	}
}

// create writes a fresh being's first state in dir.
func (f *simFamily) create(dir, name string, starting money.Amount) {
	id := state.Identity{AgentID: "agent", Name: name}
	fresh := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusRunning,
		Budget: state.Budget{Starting: starting, Remaining: starting}, JournalSeq: new(uint64)}
	if _, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return fresh, nil }); err != nil {
		f.fatal("create %s: %v", dir, err)
	}
}

// checkpoint writes b's state.json from its applied state.
func (f *simFamily) checkpoint(b *simBeing) {
	snap := *b.st
	seq := b.journal.NextSeq() - 1
	snap.JournalSeq = &seq
	if err := b.store.Save(&snap); err != nil {
		f.fatal("save: %v", err)
	}
}

func childDir(parent, id string) string { return filepath.Join(parent, "children", id) }

// crash forgets the family and starts it again from its directories:
// each being loaded, every child directory without a grant removed, and
// every pending grant completed exactly once.
func (f *simFamily) crash() {
	for _, b := range f.beings {
		_ = b.journal.Close()
	}
	f.beings = nil
	var visit func(dir string)
	visit = func(dir string) {
		b := f.open(dir)
		f.beings = append(f.beings, b)
		entries, _ := os.ReadDir(filepath.Join(dir, "children"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		for _, name := range b.st.Ungranted(names) {
			if err := os.RemoveAll(childDir(dir, name)); err != nil {
				f.fatal("remove: %v", err)
			}
		}
		for _, g := range slices.Clone(b.st.Grants) {
			cdir := childDir(dir, g.Child.ID)
			if ok, _ := state.Exists(cdir); !ok {
				f.create(cdir, g.Child.Name, g.Amount)
			}
			rec := g.Child
			f.step(b, state.ChildAdded(rec))
		}
		for _, c := range b.st.Mind.Children {
			visit(childDir(dir, c.ID))
		}
	}
	visit(f.root)
}

// check asserts both invariants from the directories (as `singularity
// status` reads them) and from the beings in memory.
func (f *simFamily) check(when string) {
	f.t.Helper()
	fam, err := accounts.Read(f.root)
	if err != nil {
		f.fatal("%s: read: %v", when, err)
	}
	if len(fam.Unreadable) > 0 {
		f.fatal("%s: unreadable: %v", when, fam.Unreadable)
	}
	if !fam.Totals.Exact() {
		f.fatal("%s: family ledger %s", when, fam.Totals.Verdict())
	}
	for _, b := range fam.Beings {
		if off := b.Entry.Off(); off.Sign() != 0 {
			f.fatal("%s: %s: remaining ≠ starting − spent + earned − granted, off by %s", when, b.Name, off)
		}
		if b.JournalOff.Sign() != 0 {
			f.fatal("%s: %s: journal off by %s", when, b.Name, b.JournalOff)
		}
	}
	var entries []accounts.Entry
	for i, b := range f.beings {
		dirs, _ := os.ReadDir(filepath.Join(b.dir, "children"))
		var names []string
		for _, d := range dirs {
			names = append(names, d.Name())
		}
		if stray := b.st.Ungranted(names); len(stray) > 0 {
			f.fatal("%s: child directories without a grant: %v", when, stray)
		}
		if off := (accounts.Entry{Budget: b.st.Budget}).Off(); off.Sign() != 0 {
			f.fatal("%s: %s in memory off by %s", when, b.st.Identity.Name, off)
		}
		e := accounts.Entry{Budget: b.st.Budget, Root: i == 0}
		for _, g := range b.st.Grants {
			if ok, _ := state.Exists(childDir(b.dir, g.Child.ID)); !ok {
				e.InTransit = e.InTransit.Add(g.Amount)
			}
		}
		entries = append(entries, e)
	}
	var t accounts.Totals
	for _, e := range entries {
		t.Add(e)
	}
	if !t.Exact() {
		f.fatal("%s: family in memory %s", when, t.Verdict())
	}
}

// amount draws a positive amount with up to 12 places, at most max.
func amount(t *rapid.T, label string, max money.Amount) (money.Amount, bool) {
	units := rapid.Int64Range(1, 5_000_000_000_000).Draw(t, label) // up to 5 USD in 1e-12
	a := money.FromInt(units).QuoDown(money.FromInt(1_000_000_000_000))
	if a.Cmp(max) > 0 {
		return a, false
	}
	return a, true
}

// TestFamilyMoneyProperties draws random families: spawns with
// endowments, debits, credits, checkpoints and crashes at any point of a
// spawn (after the grant, after the child's state). After every step, and
// after every crash and restart, each being's books balance, each agrees
// with its journal, and the family holds exactly the root's starting
// balance plus what it earned, less nothing (docs/money.md#the-family-ledger).
func TestFamilyMoneyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := filepath.Join(os.TempDir(), fmt.Sprintf("accounts-prop-%d-%d", os.Getpid(), time.Now().UnixNano()))
		defer os.RemoveAll(root)
		f := &simFamily{t: t, root: root, at: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		f.create(root, "Root", testkit.USD(rapid.SampledFrom([]string{"10", "1", "0.004", "123.456789012345"}).Draw(t, "starting")))
		f.beings = []*simBeing{f.open(root)}
		f.check("at the start")
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := range steps {
			b := f.beings[rapid.IntRange(0, len(f.beings)-1).Draw(t, "being")]
			when := fmt.Sprintf("step %d", i)
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); op {
			case 0: // a debit, API and instance parts
				api, _ := amount(t, "api", money.FromInt(5))
				inst, _ := amount(t, "instance", money.FromInt(5))
				f.step(b, state.Debited(state.Time{}, b.st.Cycle, api, inst, 7))
			case 1: // a credit
				v, _ := amount(t, "revenue", money.FromInt(5))
				f.step(b, state.RevenueCredited(state.Time{}, b.st.Cycle, v, "finance__sell"))
			case 2, 3: // a spawn, possibly crashing half way
				v, ok := amount(t, "endowment", b.st.Budget.Remaining)
				if !ok {
					continue // insufficient_funds: nothing happens
				}
				f.ids++
				id := fmt.Sprintf("child-%04d", f.ids)
				rec := state.Child{ID: id, Name: "C" + id, StateDir: childDir(b.dir, id), Status: state.StatusRunning}
				crashAt := rapid.IntRange(0, 3).Draw(t, "crash_at") // 0: none
				f.step(b, state.EndowmentGranted(rec, v))
				if crashAt == 1 {
					f.crash()
					f.check(when + ", a crash after the grant")
					continue
				}
				f.create(rec.StateDir, rec.Name, v)
				if crashAt == 2 {
					f.crash()
					f.check(when + ", a crash after the child's state")
					continue
				}
				f.step(b, state.ChildAdded(rec))
				f.beings = append(f.beings, f.open(rec.StateDir))
				if crashAt == 3 {
					f.crash()
					f.check(when + ", a crash after the child was recorded")
					continue
				}
			case 4:
				f.checkpoint(b)
			case 5:
				// A spawn that crashed before its grant was durable leaves
				// a directory no grant explains.
				f.ids++
				f.create(childDir(b.dir, fmt.Sprintf("stray-%04d", f.ids)), "Stray", testkit.USD("1"))
				f.crash()
				when += ", a crash after a stray child directory"
			}
			f.check(when)
		}
		f.crash()
		f.check("after the last restart")
	})
}
