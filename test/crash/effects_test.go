package crash

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	gap := journal(state.Started(state.Time{}), debit("1"))
	gap[1].Seq = 3
	assert.ErrorContains(t, explainedByPrefix(at(3, budget("9", "1")), gap), "has seq 3, not 2")
}
