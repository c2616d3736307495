package crash

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

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

// id is the being's id as its relatives and --being name it: a child's
// directory's name, and for the root the agent id the family shares.
func (m member) id() string {
	if m.parent != "" {
		return filepath.Base(m.dir)
	}
	if m.being == nil {
		return ""
	}
	return m.being.Identity.AgentID
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
		var debited, credited, granted, funded money.Amount
		for _, e := range events[n:] {
			switch e.Type {
			case state.EventCostDebited:
				debited = debited.Add(e.Amount)
			case state.EventRevenueCredited:
				credited = credited.Add(e.Amount)
			case state.EventEndowmentGranted:
				granted = granted.Add(e.Amount)
			case state.EventFunded:
				funded = funded.Add(e.Amount)
			}
		}
		return fmt.Errorf("up to journal_seq %d: %w (after it, %d events: debited %s, credited %s, granted %s, funded %s)", upTo, err, len(events)-n, debited, credited, granted, funded)
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

// command is one `singularity fund` or `say` the test ran, as it ended:
// acknowledged (exit 0 with its line), refused (exit 2: nothing may be
// written), or neither (an error, killed mid-way: it may or may not have
// been applied, and is retried with the same key).
type command struct {
	op     string // "fund" or "say"
	key    string // the fund's key, the message's id
	dir    string // the being's state directory
	being  string // its id, as --being names it; "" for the root
	amount string // a fund's
	text   string // a message's
	tries  int
	acked  bool
	refuse string // the refusal's sentence, when refused
}

// operatorProblems holds each command to its being's journal: an
// acknowledged fund's key is in exactly one funded event of the family
// (its being's, with its amount), an acknowledged message's id in
// exactly one message_received (its being's, with its text); one neither
// acknowledged nor refused at most once, one refused never. It returns
// how many funds and messages are in the journals.
func operatorProblems(members []member, cmds []*command) (funds, says int, problems []string) {
	type use struct {
		dir  string
		seq  uint64
		what string // amount or text
	}
	uses := map[string][]use{} // op + key → its events, family-wide
	for _, m := range members {
		for _, e := range m.events {
			switch e.Type {
			case state.EventFunded:
				uses["fund "+e.Key] = append(uses["fund "+e.Key], use{m.dir, e.Seq, e.Amount.String()})
			case state.EventMessageReceived:
				if e.From == state.FromOperator {
					uses["say "+e.ID] = append(uses["say "+e.ID], use{m.dir, e.Seq, e.Text})
				}
			}
		}
	}
	for k, us := range uses {
		if len(us) > 1 {
			problems = append(problems, fmt.Sprintf("%s applied %d times: %v", k, len(us), us))
		}
	}
	for _, c := range cmds {
		us := uses[c.op+" "+c.key]
		want := c.amount
		if c.op == "say" {
			want = c.text
		}
		switch {
		case len(us) == 1:
			if c.op == "fund" {
				funds++
			} else {
				says++
			}
			if u := us[0]; u.dir != c.dir || u.what != normalAmount(want) {
				problems = append(problems, fmt.Sprintf("%s %s: applied to %s with %q, but the command was for %s with %q", c.op, c.key, u.dir, u.what, c.dir, want))
			}
			if c.refuse != "" {
				problems = append(problems, fmt.Sprintf("%s %s was refused (%s) but applied at seq %d of %s", c.op, c.key, c.refuse, us[0].seq, us[0].dir))
			}
		case len(us) == 0 && c.acked:
			problems = append(problems, fmt.Sprintf("%s %s to %s was acknowledged after %d tries but is in no journal", c.op, c.key, c.dir, c.tries))
		}
	}
	sort.Strings(problems)
	return funds, says, problems
}

// normalAmount is a fund's amount as a journal writes it back, or s
// itself when it is not an amount.
func normalAmount(s string) string {
	if v, err := money.Parse(s); err == nil {
		return v.String()
	}
	return s
}

// messageBook is what a family's journals say about its messages.
type messageBook struct {
	received map[string]string // message id → the directory that took it in
	// answered counts, per message id, the framings that carried it and
	// were answered by the model: exactly one once delivered.
	answered map[string]int
	// waiting are the ids received that no answered framing carried yet
	// (in the being's inbox).
	waiting map[string]bool
	// again counts messages a framing carried again after the framing
	// before it, which carried them too, was never answered (a kill
	// between a framing and its answer).
	again int
	// sent are the relatives' messages (message_sent) by id: the sender's
	// directory, the receiver's id and the text.
	sent map[string]sentMessage
	// delivered are the message_delivered events by id: their reason
	// ("" for taken in, recipient_ended).
	delivered map[string]string
	// ended are the ids of beings whose journal ends their life.
	ended map[string]bool
}

type sentMessage struct{ from, to, text string }

// readMessages reads every message of the family's journals and holds
// them to docs/family.md#messages:
//
//   - an id is taken in (message_received) once in the whole family;
//   - a framing (cycle_started) carries only ids waiting in its being's
//     inbox, each with its text;
//   - the framing a model answers (the next model_completed with a
//     message) carries every message received before it that no answered
//     framing carried yet: a framing replaced unanswered loses none;
//   - so no message reaches the model in two answered framings;
//   - a relative's message (message_sent) is sent once under its id, one
//     taken in was sent by a being of the family, and one its sender
//     journaled as delivered without a reason was taken in by its
//     receiver, whose id it names.
func readMessages(members []member) (messageBook, []string) {
	book := messageBook{
		received: map[string]string{}, answered: map[string]int{}, waiting: map[string]bool{},
		sent: map[string]sentMessage{}, delivered: map[string]string{}, ended: map[string]bool{},
	}
	var problems []string
	byID := map[string]string{}    // being id → directory
	relatives := map[string]bool{} // ids of the relatives' messages taken in
	for _, m := range members {
		if m.being == nil {
			continue
		}
		byID[m.id()] = m.dir
		var open *state.Event             // the framing not answered yet
		receivedAt := map[string]uint64{} // waiting id → the seq that took it in
		texts := map[string]string{}
		for _, e := range m.events {
			switch e.Type {
			case state.EventMessageReceived:
				if dir, twice := book.received[e.ID]; twice {
					problems = append(problems, fmt.Sprintf("%s: message %s taken in again at seq %d (first by %s)", m.where(), e.ID, e.Seq, dir))
					continue
				}
				book.received[e.ID] = m.dir
				relatives[e.ID] = e.From != state.FromOperator
				receivedAt[e.ID], texts[e.ID] = e.Seq, e.Text
			case state.EventCycleStarted:
				for _, id := range e.Delivered {
					if _, ok := receivedAt[id]; !ok {
						problems = append(problems, fmt.Sprintf("%s: the framing of cycle %d (seq %d) carries message %s, which is not in the inbox (never taken in, or delivered already)", m.where(), e.Cycle, e.Seq, id))
						continue
					}
					if !framingCarries(e, texts[id]) {
						problems = append(problems, fmt.Sprintf("%s: the framing of cycle %d (seq %d) lists message %s but not its text %q", m.where(), e.Cycle, e.Seq, id, texts[id]))
					}
					if open != nil && slices.Contains(open.Delivered, id) {
						book.again++
					}
				}
				open = &e
			case state.EventModelCompleted:
				if open == nil || e.Chat == nil {
					continue
				}
				for id, at := range receivedAt {
					if at < open.Seq && !slices.Contains(open.Delivered, id) {
						problems = append(problems, fmt.Sprintf("%s: message %s (taken in at seq %d) is lost: the framing of cycle %d (seq %d), answered at seq %d, does not carry it", m.where(), id, at, open.Cycle, open.Seq, e.Seq))
						delete(receivedAt, id) // said once
					}
				}
				for _, id := range open.Delivered {
					if _, ok := receivedAt[id]; ok {
						book.answered[id]++
						delete(receivedAt, id)
					}
				}
				open = nil
			case state.EventMessageSent:
				if s, twice := book.sent[e.ID]; twice {
					problems = append(problems, fmt.Sprintf("%s: message %s sent again at seq %d (first by %s)", m.where(), e.ID, e.Seq, s.from))
					continue
				}
				book.sent[e.ID] = sentMessage{from: m.dir, to: e.To, text: e.Text}
			case state.EventMessageDelivered:
				book.delivered[e.ID] = e.Reason
			case state.EventStopped:
				ended := e.Status == state.StatusExhausted || e.Status == state.StatusFailed
				book.ended[m.id()] = ended
			case state.EventFunded:
				if m.being.Status != state.StatusFailed {
					book.ended[m.id()] = false
				}
			}
		}
		for id := range receivedAt {
			book.waiting[id] = true
		}
	}
	for id, reason := range book.delivered {
		s, ok := book.sent[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("message %s journaled as delivered, but no being sent it", id))
		case reason == "" && book.received[id] == "":
			problems = append(problems, fmt.Sprintf("message %s from %s journaled as delivered, but its receiver %s never took it in", id, s.from, s.to))
		}
	}
	for id, dir := range book.received {
		if relatives[id] {
			if _, ok := book.sent[id]; !ok {
				problems = append(problems, fmt.Sprintf("%s took in message %s from a relative, which no being journaled as sent", dir, id))
			}
		}
	}
	for id, s := range book.sent {
		if dir, ok := book.received[id]; ok && byID[s.to] != "" && dir != byID[s.to] {
			problems = append(problems, fmt.Sprintf("message %s from %s for %s was taken in by %s", id, s.from, byID[s.to], dir))
		}
	}
	sort.Strings(problems)
	return book, problems
}

// framingCarries reports whether a cycle_started's framing message holds
// text.
func framingCarries(e state.Event, text string) bool {
	for _, m := range e.Messages {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// pending is a relative's message not taken in yet.
type pending struct {
	id string
	sentMessage
}

func (p pending) String() string {
	return fmt.Sprintf("message %s from %s to %s (%q)", p.id, p.from, p.to, p.text)
}

// undelivered lists the relatives' messages that no receiver took in
// and whose sender was not told its receiver ended: while the family
// lives its outboxes drain, but a message to a being whose life ended is
// never taken in.
func (book messageBook) undelivered() []pending {
	var out []pending
	for id, s := range book.sent {
		if book.received[id] != "" || book.delivered[id] == "recipient_ended" || book.ended[s.to] {
			continue
		}
		out = append(out, pending{id, s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
