package crash

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// journal numbers events 1, 2, 3, … as the journal would.
func journal(events ...state.Event) []state.Event {
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	return events
}

func asked(calls ...chat.ToolCall) state.Event {
	return state.ModelCompleted(state.Time{}, 1, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})
}

func call(id, tool, args string) chat.ToolCall {
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: tool, Arguments: args}}
}

func finished(id, tool string) state.Event {
	e := state.ToolFinished(state.Time{}, 1, tool, "success")
	e.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: id, Name: tool}
	return e
}

// TestCallEffects shows that each per-call check of the crash test fails
// on the journal it exists to catch.
func TestCallEffects(t *testing.T) {
	sell := call("c1", "finance__finance_sell_report", `{"item": "x"}`)
	mem := state.MemoryAdded(state.Memory{ID: "m1", Kind: "observation", Text: "a"})
	credit := state.RevenueCredited(state.Time{}, 1, testkit.USD("1"), "finance__finance_sell_report")
	tests := []struct {
		name    string
		events  []state.Event
		credits []string
		problem string // a substring of the one problem; "" for none
	}{
		{"one call, its credit", journal(asked(sell), finished("c1", sell.Function.Name), credit), []string{`finance__finance_sell_report {"item":"x"}`}, ""},
		{"a warning between steps", journal(asked(sell, call("c2", "remember", "{}")), finished("c1", sell.Function.Name), state.Warning(state.Time{}, 1, "w"), finished("c2", "remember"), mem), nil, ""},
		{"a call finished twice", journal(asked(sell), finished("c1", sell.Function.Name), finished("c1", sell.Function.Name)), nil, "call c1 finished twice"},
		{"a memory applied twice", journal(asked(call("c2", "remember", "{}")), finished("c2", "remember"), mem, mem), nil, "applied memory_added twice"},
		{"a credit applied twice", journal(asked(sell), finished("c1", sell.Function.Name), credit, credit), []string{`finance__finance_sell_report {"item":"x"}`}, "applied revenue_credited twice"},
		{"a credit after a completion", journal(asked(sell), finished("c1", sell.Function.Name), asked(), credit), nil, "follows no call's tool_finished"},
		{"a call never asked for", journal(finished("c9", "remember")), nil, "no completion before it asked for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			credits, problems := callEffects(member{dir: "d", events: tt.events})
			assert.Equal(t, tt.credits, credits)
			if tt.problem == "" {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0], tt.problem)
		})
	}
}

// TestExplainedByPrefix shows that the checkpoint is held to its
// journal_seq, not to whichever prefix happens to balance.
func TestExplainedByPrefix(t *testing.T) {
	debit := func(amount string) state.Event {
		return state.Debited(state.Time{}, 1, testkit.USD(amount), testkit.USD("0"), 0)
	}
	budget := func(remaining, spent string) state.Budget {
		return state.Budget{Starting: testkit.USD("10"), Remaining: testkit.USD(remaining), APISpent: testkit.USD(spent)}
	}
	at := func(seq uint64, b state.Budget) *state.Being { return &state.Being{Budget: b, JournalSeq: &seq} }
	events := journal(state.Started(state.Time{}), debit("1"), debit("0"), debit("2"))
	tests := []struct {
		name  string
		being *state.Being
		err   string
	}{
		{"fresh, no journal_seq", &state.Being{Budget: budget("10", "0")}, ""},
		{"at its seq", at(2, budget("9", "1")), ""},
		{"events after its seq", at(3, budget("9", "1")), ""},
		// Balances at seq 2 and 3, but the checkpoint says 1: a
		// prefix search would accept it.
		{"money not at its seq", at(1, budget("9", "1")), "up to journal_seq 1"},
		{"beyond the journal", at(5, budget("7", "3")), "ends at seq 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := explainedByPrefix(tt.being, events)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tt.err), err.Error())
		})
	}
	// A fund is money in: the checkpoint holds it once it holds its
	// event.
	funded := journal(state.Started(state.Time{}), state.Funded(state.Time{}, 1, testkit.USD("5"), "k", ""))
	assert.NoError(t, explainedByPrefix(at(2, state.Budget{Starting: testkit.USD("10"), Remaining: testkit.USD("15"), Funded: testkit.USD("5")}), funded))
	assert.ErrorContains(t, explainedByPrefix(at(2, budget("10", "0")), funded), "up to journal_seq 2")
	gap := journal(state.Started(state.Time{}), debit("1"))
	gap[1].Seq = 3
	assert.ErrorContains(t, explainedByPrefix(at(3, budget("9", "1")), gap), "has seq 3, not 2")
}

// TestOperatorProblems shows that each check of the operator's commands
// fails on the journals it exists to catch.
func TestOperatorProblems(t *testing.T) {
	fund := func(key, amount string) state.Event {
		return state.Funded(state.Time{}, 1, testkit.USD(amount), key, "")
	}
	say := func(id, text string) state.Event {
		return state.MessageReceived(state.Time{}, 1, state.InMessage{ID: id, From: state.FromOperator, Text: text})
	}
	ack := func(c command) *command { c.acked = true; return &c }
	f1 := command{op: "fund", key: "k1", dir: "a", amount: "0.010"}
	s1 := command{op: "say", key: "s1", dir: "a", text: "hi"}
	tests := []struct {
		name    string
		events  map[string][]state.Event // dir → journal
		cmds    []*command
		problem string // a substring of the one problem; "" for none
	}{
		{"applied once each", map[string][]state.Event{"a": journal(fund("k1", "0.01"), say("s1", "hi"))}, []*command{ack(f1), ack(s1)}, ""},
		{"not acknowledged, not applied", map[string][]state.Event{"a": journal(state.Started(state.Time{}))}, []*command{&f1, &s1}, ""},
		{"acknowledged, not applied", map[string][]state.Event{"a": journal(say("s1", "hi"))}, []*command{ack(f1), ack(s1)}, "fund k1 to a was acknowledged after 0 tries but is in no journal"},
		{"a fund applied twice", map[string][]state.Event{"a": journal(fund("k1", "0.01"), fund("k1", "0.01"))}, []*command{ack(f1)}, "fund k1 applied 2 times"},
		{"a message taken in by two beings", map[string][]state.Event{"a": journal(say("s1", "hi")), "b": journal(say("s1", "hi"))}, []*command{&s1}, "say s1 applied 2 times"},
		{"to the wrong being", map[string][]state.Event{"b": journal(fund("k1", "0.01"))}, []*command{ack(f1)}, "applied to b"},
		{"with another amount", map[string][]state.Event{"a": journal(fund("k1", "0.02"))}, []*command{ack(f1)}, `with "0.02"`},
		{"refused but applied", map[string][]state.Event{"a": journal(say("s1", "hi"))}, []*command{{op: "say", key: "s1", dir: "a", text: "hi", refuse: "no"}}, "was refused (no) but applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []member
			for _, dir := range []string{"a", "b"} {
				if events, ok := tt.events[dir]; ok {
					members = append(members, member{dir: dir, events: events})
				}
			}
			_, _, problems := operatorProblems(members, tt.cmds)
			if tt.problem == "" {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1, "%v", problems)
			assert.Contains(t, problems[0], tt.problem)
		})
	}
}

// TestReadMessages shows that each check of the messages' way to the
// model fails on the journal it exists to catch, and that a framing
// replaced unanswered (a kill between a framing and its answer) may
// carry its messages again.
func TestReadMessages(t *testing.T) {
	in := func(id, text string) state.Event {
		return state.MessageReceived(state.Time{}, 1, state.InMessage{ID: id, From: state.FromOperator, Text: text})
	}
	frame := func(cycle uint64, ids ...string) state.Event {
		text := framing.Prefix + strconv.FormatUint(cycle, 10) + "."
		for _, id := range ids {
			text += "\n\nMessage from the operator: text of " + id
		}
		e := state.CycleStarted(state.Time{}, cycle, chat.Message{Role: chat.RoleUser, Content: text})
		e.Delivered = ids
		return e
	}
	answer := asked()
	billed := state.ModelCompleted(state.Time{}, 1, chat.Usage{TotalTokens: 5})
	sent := func(id, to string) state.Event {
		return state.MessageSent(state.Time{}, 1, state.OutMessage{ID: id, To: to, Text: "x"})
	}
	tests := []struct {
		name     string
		events   []state.Event
		answered int // m1's answered framings
		again    int
		problem  string
	}{
		{"carried once", journal(in("m1", "text of m1"), frame(1, "m1"), answer, frame(2), answer), 1, 0, ""},
		{"waiting in the inbox", journal(frame(1), in("m1", "text of m1"), answer), 0, 0, ""},
		{"carried again after a kill", journal(in("m1", "text of m1"), frame(1, "m1"), frame(2, "m1"), answer), 1, 1, ""},
		{"carried again after a billed rejection", journal(in("m1", "text of m1"), frame(1, "m1"), billed, frame(2, "m1"), answer), 1, 1, ""},
		{"lost with its unanswered framing", journal(in("m1", "text of m1"), frame(1, "m1"), frame(2), answer), 0, 0, "message m1 (taken in at seq 1) is lost"},
		{"never carried", journal(in("m1", "text of m1"), frame(1), answer), 0, 0, "is lost"},
		{"carried twice", journal(in("m1", "text of m1"), frame(1, "m1"), answer, frame(2, "m1"), answer), 1, 0, "carries message m1, which is not in the inbox"},
		{"taken in twice", journal(in("m1", "text of m1"), in("m1", "text of m1")), 0, 0, "message m1 taken in again at seq 2"},
		{"listed without its text", journal(in("m1", "another text"), frame(1, "m1"), answer), 1, 0, "but not its text"},
		{"sent twice", journal(sent("m9", "b-1"), sent("m9", "b-1")), 0, 0, "message m9 sent again"},
		{"a relative's message never sent", journal(state.MessageReceived(state.Time{}, 1, state.InMessage{ID: "m8", From: "b-1", Relation: "child", Text: "x"})), 0, 0, "which no being journaled as sent"},
		{"delivered, never taken in", journal(sent("m9", "b-1"), state.MessageDelivered(state.Time{}, 1, "m9")), 0, 0, "its receiver b-1 never took it in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &state.Being{Identity: state.Identity{AgentID: "a-1", Name: "Ada"}}
			book, problems := readMessages([]member{{dir: "a", being: b, events: tt.events}})
			assert.Equal(t, tt.answered, book.answered["m1"])
			assert.Equal(t, tt.again, book.again)
			if tt.problem == "" {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1, "%v", problems)
			assert.Contains(t, problems[0], tt.problem)
		})
	}
	// A relative's message is pending until its receiver takes it in,
	// unless the receiver's life ended.
	ada := member{dir: "a", being: &state.Being{Identity: state.Identity{AgentID: "a-1"}}, events: journal(sent("m9", "b-1"))}
	// A child's id is its directory's name; the family shares its
	// agent id.
	bo := member{dir: "a/children/b-1", parent: "a", being: &state.Being{Identity: state.Identity{AgentID: "a-1"}}, events: journal(state.Started(state.Time{}))}
	book, problems := readMessages([]member{ada, bo})
	assert.Empty(t, problems)
	require.Len(t, book.undelivered(), 1)
	bo.events = journal(state.MessageReceived(state.Time{}, 1, state.InMessage{ID: "m9", From: "a-1", Text: "x"}))
	book, problems = readMessages([]member{ada, bo})
	assert.Empty(t, problems)
	assert.Empty(t, book.undelivered())
	bo.events = journal(state.Stopped(state.Time{}, 1, state.StatusExhausted, "broke"))
	book, _ = readMessages([]member{ada, bo})
	assert.Empty(t, book.undelivered(), "an ended receiver takes nothing in")
	cy := member{dir: "a/children/c-1", parent: "a", being: bo.being, events: journal(state.MessageReceived(state.Time{}, 1, state.InMessage{ID: "m9", From: "a-1", Text: "x"}))}
	bo.events = nil
	_, problems = readMessages([]member{ada, bo, cy})
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "was taken in by a/children/c-1")
}
