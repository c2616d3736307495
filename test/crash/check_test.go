package crash

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
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

// explainedByPrefix reports whether the journal's prefix up to the
// checkpoint's journal_seq (docs/state.md#resume-and-recovery) accounts
// exactly for the checkpoint's budget (testkit.CheckInvariant over that
// prefix): every change of the budget is journaled before the state
// reflecting it is written, and the checkpoint includes the events up to
// journal_seq, no more and no fewer. So the journal must reach that seq,
// with the events numbered 1, 2, 3, … before it; a kill may leave more
// events after it, never fewer. A state without journal_seq (none yet:
// the fresh state before the first step) covers the empty prefix.
func explainedByPrefix(b *state.Being, events []state.Event) error {
	upTo := b.Seq()
	n := 0
	for n < len(events) && events[n].Seq <= upTo {
		if want := uint64(n + 1); events[n].Seq != want {
			return fmt.Errorf("the journal's event %d has seq %d, not %d", n+1, events[n].Seq, want)
		}
		n++
	}
	if uint64(n) != upTo {
		return fmt.Errorf("the checkpoint includes the journal up to seq %d, but the journal ends at seq %d", upTo, n)
	}
	if err := testkit.CheckInvariant(b.Budget, events[:n]); err != nil {
		var debited, credited, granted money.Amount
		for _, e := range events[n:] {
			switch e.Type {
			case state.EventCostDebited:
				debited = debited.Add(e.Amount)
			case state.EventRevenueCredited:
				credited = credited.Add(e.Amount)
			case state.EventEndowmentGranted:
				granted = granted.Add(e.Amount)
			}
		}
		return fmt.Errorf("up to journal_seq %d: %w (after it, %d events: debited %s, credited %s, granted %s)", upTo, err, len(events)-n, debited, credited, granted)
	}
	return nil
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

// messageCounts are the distinct ids of a family's relatives' messages
// journaled as sent, received and delivered.
type messageCounts struct{ sent, received, delivered int }

// messagesOnce checks the relatives' messages of a family
// (docs/family.md#messages-between-relatives) as its journals stand:
// no being received one id twice, every relative's message received was
// journaled as sent by a being of the family first, and every message a
// sender journaled as delivered (without a reason) was received.
func messagesOnce(members []member) (messageCounts, []string) {
	var problems []string
	sent := map[string]string{}       // id → its sender
	received := map[string][]string{} // id → who received it
	delivered := map[string]string{}  // id → its sender
	for _, m := range members {
		for _, e := range m.events {
			switch {
			case e.Type == state.EventMessageSent:
				sent[e.ID] = m.where()
			case e.Type == state.EventMessageReceived && e.Relation != "":
				received[e.ID] = append(received[e.ID], m.where())
			case e.Type == state.EventMessageDelivered && e.Reason == "":
				delivered[e.ID] = m.where()
			}
		}
	}
	for id, by := range received {
		if len(by) > 1 {
			problems = append(problems, fmt.Sprintf("message %s received %d times: %v", id, len(by), by))
		}
		if _, ok := sent[id]; !ok {
			problems = append(problems, fmt.Sprintf("%s: received message %s, which no being journaled as sent", by[0], id))
		}
	}
	for id, who := range delivered {
		if _, ok := received[id]; !ok {
			problems = append(problems, fmt.Sprintf("%s: message %s journaled as delivered, but no being received it", who, id))
		}
	}
	sort.Strings(problems)
	return messageCounts{sent: len(sent), received: len(received), delivered: len(delivered)}, problems
}

// effectKinds are the built-in effects journaled after their call's
// tool_finished, in the same step (docs/cycle.md#anatomy-of-a-cycle).
// child_added is not among them: a spawn's child may be recorded by a
// later step (the boot completes a grant), and familyProblems checks
// grants and children one by one.
var effectKinds = map[string]bool{
	state.EventMemoryAdded:   true,
	state.EventRuleAdded:     true,
	state.EventLearningAdded: true,
	state.EventPromptSet:     true,
	state.EventModelSwitched: true,
}

// callEffects reads one being's journal call by call. Every tool call
// the model made (model_completed's tool_calls) finishes at most once,
// under the id the model gave it; every built-in effect and every
// revenue credit follows the tool_finished of its call, at most one of
// each kind per call. It returns the delivery key (delivery.key) of the
// call behind each revenue credit, and the problems found.
func callEffects(m member) (credits []string, problems []string) {
	asked := map[string]chat.ToolCall{} // call id → the call as the model made it
	finished := map[string]uint64{}     // call id → seq of its tool_finished
	current := ""                       // the call whose step is being read
	applied := map[string]bool{}        // current call's kinds seen
	for _, e := range m.events {
		switch {
		case e.Type == state.EventModelCompleted:
			current = ""
			if e.Chat != nil {
				for _, c := range e.Chat.ToolCalls {
					asked[c.ID] = c
				}
			}
		case e.Type == state.EventToolFinished:
			current = ""
			if e.Chat == nil || e.Chat.ToolCallID == "" {
				problems = append(problems, fmt.Sprintf("%s: tool_finished seq %d names no call id", m.where(), e.Seq))
				continue
			}
			id := e.Chat.ToolCallID
			if seq, twice := finished[id]; twice {
				problems = append(problems, fmt.Sprintf("%s: call %s finished twice (seq %d and %d)", m.where(), id, seq, e.Seq))
				continue
			}
			finished[id] = e.Seq
			if _, ok := asked[id]; !ok {
				problems = append(problems, fmt.Sprintf("%s: call %s finished (seq %d), but no completion before it asked for it", m.where(), id, e.Seq))
				continue
			}
			current, applied = id, map[string]bool{}
		case e.Type == state.EventRevenueCredited || effectKinds[e.Type]:
			if current == "" {
				problems = append(problems, fmt.Sprintf("%s: %s seq %d follows no call's tool_finished", m.where(), e.Type, e.Seq))
				continue
			}
			if applied[e.Type] {
				problems = append(problems, fmt.Sprintf("%s: call %s applied %s twice (again at seq %d)", m.where(), current, e.Type, e.Seq))
				continue
			}
			applied[e.Type] = true
			if e.Type == state.EventRevenueCredited {
				c := asked[current]
				credits = append(credits, delivery{Tool: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)}.key())
			}
		case e.Type == state.EventWarning:
			// A warning goes with the next step, before its events.
		default:
			current = ""
		}
	}
	return credits, problems
}
