package being

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// moneyEvents is the money events of a journal.
func moneyEvents(events []state.Event) []state.Event {
	var out []state.Event
	for _, e := range events {
		if e.Type == state.EventCostDebited || e.Type == state.EventRevenueCredited {
			out = append(out, e)
		}
	}
	return out
}

// TestCompletionPricedWhereItLands: the handler that takes the gateway's
// answer prices it and journals model_completed with its cost_debited at
// once, asking no other actor; once the step is durable the debit is
// applied to the being's budget, the one copy of its money.
func TestCompletionPricedWhereItLands(t *testing.T) {
	pricing := budget.Pricing{InputPerMillion: testkit.USD("3"), OutputPerMillion: testkit.USD("15"), InstancePerHour: testkit.USD("1")}
	usage := chat.Usage{PromptTokens: 1200, CompletionTokens: 100, TotalTokens: 1300}
	tests := []struct {
		name          string
		prices        *prices.Pair
		api, instance string
		remaining     string
	}{
		{"configured prices", nil, "0.0051", "0.000034277778", "0.994865722222"},
		// A per-model price replaces the token prices for this debit
		// only; instance time is priced as configured.
		{"the model's prices", &prices.Pair{Input: testkit.USD("10"), Output: testkit.USD("1")}, "0.0121", "0.000034277778", "0.987865722222"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := loadedBeing(t, func(o *Options) { o.Mode, o.Pricing = Once, pricing })
			ctx := &stepContext{}
			b.cycle = &cycleRun{round: 1, waiting: waitModel, reservation: budget.Reservation{Bound: testkit.USD("1")}}
			b.phase = phaseCycling

			b.completionAnswered(ctx, reply{kind: replyCompletion, epoch: b.epoch, res: messages.CompletionResponse{
				Message: chat.Message{Content: "done"}, Usage: usage, Elapsed: 123400 * time.Microsecond, Prices: tc.prices,
			}})

			assert.Empty(t, ctx.sent, "nobody is asked or told: no parent, no ledger")
			assert.Equal(t, phaseIdle, b.phase, "the cycle ended on the completion's content")
			events := beingJournal(t, b)
			assert.Equal(t, []string{"model_completed", "cost_debited"}, testkit.Types(events))
			debit := moneyEvents(events)[0]
			assert.Equal(t, tc.api, debit.API.String())
			assert.Equal(t, tc.instance, debit.Instance.String())
			assert.Equal(t, uint64(1300), debit.Tokens)
			assert.Equal(t, tc.remaining, b.st.Budget.Remaining.String())
			assert.Equal(t, uint64(1300), b.st.Budget.TotalTokens)
			require.NoError(t, testkit.CheckInvariant(b.st.Budget, events))
			saved, err := state.Load(b.opts.StateDir)
			require.NoError(t, err)
			for _, pair := range [][2]string{
				{saved.Budget.Remaining.String(), tc.remaining},
				{saved.Budget.APISpent.String(), tc.api},
				{saved.Budget.InstanceSpent.String(), tc.instance},
			} {
				assert.Equal(t, pair[1], pair[0], "the cycle-end checkpoint holds the applied budget")
			}
		})
	}
}

// TestCreditJournaledWithItsCall: the revenue of a trusted result is found
// in the handler that journals the call, in the call's own step, and
// applied once that step is durable; an untrusted tool or a failed call
// credits nothing.
func TestCreditJournaledWithItsCall(t *testing.T) {
	sale := []byte(`{"sale":{"revenue_usd":0.5}}`)
	tests := []struct {
		name      string
		tool      string
		result    outcome.Outcome
		credited  string // "" for none
		remaining string
	}{
		{"trusted revenue", "finance__sell", outcome.Succeeded(sale), "0.5", "1.5"},
		{"untrusted tool", "echo__echo", outcome.Succeeded(sale), "", "1"},
		{"failed call", "finance__sell", outcome.Outcome{Status: outcome.Failed, Content: sale}, "", "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := loadedBeing(t, func(o *Options) { o.Mode = Once })
			require.NoError(t, b.rebuildCatalog())
			ctx := &stepContext{}
			calls := []chat.ToolCall{call("c", tc.tool)}
			say(b, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})
			// The round limit is reached, so the cycle ends after this call.
			b.cycle = &cycleRun{round: b.maxToolRounds(), calls: calls, next: 1, waiting: waitLas, tool: toolCall{call: calls[0], began: time.Now()}}
			b.phase = phaseCycling

			b.toolDone(ctx, toolResult{outcome: tc.result})

			assert.Empty(t, ctx.sent, "nobody is asked or told")
			events := beingJournal(t, b)
			credits := moneyEvents(events)
			if tc.credited == "" {
				assert.Empty(t, credits)
			} else {
				require.Len(t, credits, 1)
				assert.Equal(t, tc.credited, credits[0].Amount.String())
				assert.Equal(t, tc.tool, credits[0].Source)
				assert.Equal(t, "tool_finished", events[0].Type, "the credit is in the call's step")
			}
			assert.Equal(t, tc.remaining, b.st.Budget.Remaining.String())
			require.NoError(t, testkit.CheckInvariant(b.st.Budget, events))
			assert.Equal(t, map[string]int{"c": 1}, resultsFor(b.st.Conversation))
		})
	}
}

// TestLedgerFiguresAreTheBeings: the ledger's node is answered by the
// being from its own budget, the one copy of its money.
func TestLedgerFiguresAreTheBeings(t *testing.T) {
	b := loadedBeing(t)
	b.st.Apply(state.Debited(b.opts.now(), 1, testkit.USD("0.25"), testkit.USD("0.05"), 10))
	d := b.describeLedger()
	assert.Equal(t, "ledger", d.Kind)
	assert.Equal(t, b.st.Identity.Name, d.Name)
	assert.Equal(t, "solvent", d.Status)
	assert.Equal(t, map[string]any{"starting": "1", "remaining": "0.7", "spent": "0.3", "earned": "0", "granted": "0"}, d.Figures)
}
