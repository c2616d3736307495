package crash

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

const (
	stateFile   = state.StateFile
	journalFile = state.JournalFile
)

// member is one being directory of a family as the test found it.
type member struct {
	dir       string
	parent    string        // the parent's directory; "" for the root
	being     *state.Being  // nil: no state.json (yet)
	events    []state.Event // nil: no journal (yet)
	torn      bool          // the journal ends in a torn line
	recorded  bool          // the root, or a child its parent's state.json records
	reachable bool          // recorded, and so is every ancestor
}

func (m member) name() string {
	if m.being == nil {
		return "?"
	}
	return m.being.Identity.Name
}

// where names a member in a failure: its name and directory.
func (m member) where() string { return m.name() + " (" + m.dir + ")" }

// walk reads every being directory of the family at root: the root and,
// recursively, every directory under children/. It reads each state.json
// with state.Load and each journal with state.ReadJournal, where a torn
// last line (ErrTornLine: the events before it are returned) is legal.
// What cannot be read at all is a problem.
func walk(root string) ([]member, []string) {
	var members []member
	var problems []string
	var visit func(dir, parent string, recorded, reachable bool)
	visit = func(dir, parent string, recorded, reachable bool) {
		m := member{dir: dir, parent: parent, recorded: recorded, reachable: reachable && recorded}
		_, err := os.Stat(filepath.Join(dir, stateFile))
		switch {
		case errors.Is(err, os.ErrNotExist):
			// The root before its first state, or a child directory made
			// by a spawn killed before the child's first state.json.
			members = append(members, m)
			return
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", dir, err))
			return
		}
		b, err := state.Load(dir)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: state.json does not load: %v", dir, err))
			return
		}
		m.being = b
		events, err := state.ReadJournal(filepath.Join(dir, journalFile))
		switch {
		case err == nil:
			m.events = events
		case errors.Is(err, state.ErrTornLine):
			m.events, m.torn = events, true
		case errors.Is(err, os.ErrNotExist):
			// A being whose state was written but that never started
			// (killed before its actor opened the journal).
			if b.Status != state.StatusStarting {
				problems = append(problems, fmt.Sprintf("%s: no journal, but status %s", m.where(), b.Status))
			}
		default:
			problems = append(problems, fmt.Sprintf("%s: the journal does not load: %v", m.where(), err))
		}
		members = append(members, m)

		records := map[string]bool{}
		for _, c := range b.Mind.Children {
			cd := c.StateDir
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(dir, "children", c.ID)
			}
			records[filepath.Clean(cd)] = true
		}
		entries, err := os.ReadDir(filepath.Join(dir, "children"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s: children: %v", m.where(), err))
		}
		for _, e := range entries {
			if e.IsDir() {
				cd := filepath.Join(dir, "children", e.Name())
				visit(cd, dir, records[cd], m.reachable)
				delete(records, cd)
			}
		}
		for cd := range records {
			if _, err := os.Stat(cd); err != nil {
				problems = append(problems, fmt.Sprintf("%s records a child at %s that is not there: %v", m.where(), cd, err))
			}
		}
	}
	visit(root, "", true, true)
	return members, problems
}

// explainedByPrefix reports whether some prefix of the journal (cut
// after a money event, or empty) accounts exactly for the checkpoint's
// budget: what a kill may leave, since every change of the budget is
// journaled before the state reflecting it is written. The prefix found
// is confirmed with testkit.CheckInvariant.
func explainedByPrefix(b state.Budget, events []state.Event) error {
	var debited, credited, granted money.Amount
	cuts := []int{0}
	match := func() bool { return b.Starting.Sub(debited).Add(credited).Sub(granted).Equal(b.Remaining) }
	found := -1
	if match() {
		found = 0
	}
	for i, e := range events {
		switch e.Type {
		case state.EventCostDebited:
			debited = debited.Add(e.Amount)
		case state.EventRevenueCredited:
			credited = credited.Add(e.Amount)
		case state.EventEndowmentGranted:
			granted = granted.Add(e.Amount)
		default:
			continue
		}
		cuts = append(cuts, i+1)
		if match() {
			found = i + 1
		}
	}
	if found < 0 {
		return fmt.Errorf("no prefix of the journal's %d money events accounts for remaining %s (starting %s, whole journal: debited %s, credited %s, granted %s)",
			len(cuts)-1, b.Remaining, b.Starting, debited, credited, granted)
	}
	return testkit.CheckInvariant(b, events[:found])
}

// duplicateNames lists the names given to more than one child directory
// of one parent: a spawn delivered twice.
func duplicateNames(members []member) []string {
	byParent := map[string]map[string][]string{}
	for _, m := range members {
		if m.being == nil || m.parent == "" {
			continue
		}
		parent := m.parent
		if byParent[parent] == nil {
			byParent[parent] = map[string][]string{}
		}
		byParent[parent][m.name()] = append(byParent[parent][m.name()], filepath.Base(m.dir))
	}
	var out []string
	for parent, names := range byParent {
		for name, dirs := range names {
			if len(dirs) > 1 {
				sort.Strings(dirs)
				out = append(out, fmt.Sprintf("child %s spawned %d times under %s: %v", name, len(dirs), parent, dirs))
			}
		}
	}
	sort.Strings(out)
	return out
}

// familyProblems checks the family's money after a graceful resume
// (docs/money.md#funded-children): the family ledger is exact, no grant
// is left pending, every grant has exactly one child (recorded, with the
// grant as its starting balance) and no child directory exists without
// a grant.
func familyProblems(root string, members []member) []string {
	var problems []string
	fam, err := accounts.Read(root)
	if err != nil {
		return []string{"family ledger: " + err.Error()}
	}
	if !fam.Totals.Exact() {
		problems = append(problems, "family ledger: "+fam.Totals.Verdict())
	}
	for _, err := range fam.Unreadable {
		problems = append(problems, "family ledger: "+err.Error())
	}
	grants := map[string][]money.Amount{} // child id → amounts granted
	for _, m := range members {
		if m.being == nil {
			continue
		}
		if m.reachable && len(m.being.Grants) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d grant(s) still pending after a graceful resume", m.where(), len(m.being.Grants)))
		}
		for _, e := range m.events {
			if e.Type == state.EventEndowmentGranted && e.Child != nil {
				grants[e.Child.ID] = append(grants[e.Child.ID], e.Amount)
			}
		}
	}
	children := map[string]member{}
	for _, m := range members {
		if m.parent == "" {
			continue
		}
		id := filepath.Base(m.dir)
		children[id] = m
		amounts, ok := grants[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: a child directory without a grant", m.dir))
		case m.being == nil:
			problems = append(problems, fmt.Sprintf("%s: a grant's child without state.json", m.dir))
		case !m.reachable:
			problems = append(problems, fmt.Sprintf("%s: a grant's child its parent does not record", m.where()))
		case !m.being.Budget.Starting.Equal(amounts[0]):
			problems = append(problems, fmt.Sprintf("%s: starting %s, but granted %s", m.where(), m.being.Budget.Starting, amounts[0]))
		}
	}
	for id, amounts := range grants {
		if len(amounts) != 1 {
			problems = append(problems, fmt.Sprintf("child %s granted %d times", id, len(amounts)))
		}
		if _, ok := children[id]; !ok {
			problems = append(problems, fmt.Sprintf("a grant to child %s, which does not exist", id))
		}
	}
	sort.Strings(problems)
	return problems
}
