package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

func TestRecover(t *testing.T) {
	p := Pricing{InputPerMillion: m("1"), InstancePerHour: m("3600")}
	now := state.Now()
	u := chat.Usage{PromptTokens: 1000, TotalTokens: 1000}
	debit := ComputeDebit(p, u, time.Millisecond) // api 0.001, instance 0.001
	events := []state.Event{
		state.Started(now),
		state.CycleStarted(now, 1),
		state.ModelCompleted(now, 1, u),
		state.Debited(now, 1, debit.Amount, money.Zero, 0), // the reference's, amount only
		state.ToolFinished(now, 1, "finance__sell", "success"),
		state.RevenueCredited(now, 1, m("0.5"), "finance__sell"),
	}
	start := state.Budget{Starting: m("1"), Remaining: m("1")}
	afterDebit := ApplyDebit(start, debit)
	afterCredit, _ := ApplyCredit(afterDebit, m("0.5"))

	t.Run("current", func(t *testing.T) {
		got, n, err := Recover(afterCredit, events, p)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, afterCredit, got)
	})
	t.Run("credit lagging", func(t *testing.T) {
		got, n, err := Recover(afterDebit, events, p)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.NoError(t, testkit.CheckInvariant(got, events))
		assert.Equal(t, "1.498", got.Remaining.String())
	})
	t.Run("debit lagging: split recomputed", func(t *testing.T) {
		got, n, err := Recover(start, events[:4], p)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, afterDebit, got)
	})
	t.Run("debit lagging at new prices", func(t *testing.T) {
		got, _, err := Recover(start, events[:4], Pricing{InputPerMillion: m("1000")})
		require.NoError(t, err)
		assert.Equal(t, "0.002", got.APISpent.String(), "api capped at the journaled amount")
		assert.Equal(t, "0", got.InstanceSpent.String())
		assert.NoError(t, testkit.CheckInvariant(got, events[:4]))
	})
	t.Run("completion without its debit is lost", func(t *testing.T) {
		got, n, err := Recover(start, events[:3], p)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, start, got)
	})
	t.Run("state ahead of journal", func(t *testing.T) {
		_, _, err := Recover(afterCredit, events[:4], p)
		assert.ErrorContains(t, err, "state: journal does not account for the saved budget")
	})
}
