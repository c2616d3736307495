package ledger

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

const deadline = 5 * time.Second

func ask[T any](t *testing.T, system *actor.ActorSystem, pid *actor.PID, msg any) T {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, msg, deadline).Result()
	require.NoError(t, err)
	out, ok := res.(T)
	require.True(t, ok, "reply %T", res)
	return out
}

func TestLedgerActor(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)

	props, err := Props("ledger", Pricing{InputPerMillion: m("3"), OutputPerMillion: m("15"), InstancePerHour: m("1")},
		state.Budget{Starting: m("0.01"), Remaining: m("0.01")})
	require.NoError(t, err)
	pid, err := system.Root.SpawnNamed(props, "being-ada/ledger")
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })

	desc := ask[messages.Description](t, system, pid, messages.DescribeRequest{})
	assert.Equal(t, StatusSolvent, desc.Status)
	assert.Equal(t, "0.01", desc.Figures["remaining"])

	deb := ask[messages.DebitResponse](t, system, pid, messages.DebitRequest{
		Usage:   chat.Usage{PromptTokens: 1200, CompletionTokens: 100, TotalTokens: 1300},
		Elapsed: 123400 * time.Microsecond,
	})
	assert.Equal(t, "0.0051", deb.API.String())
	assert.Equal(t, "0.000034277778", deb.Instance.String())
	assert.Equal(t, "0.005134277778", deb.Amount.String())
	assert.Equal(t, uint64(1300), deb.Tokens)
	// A per-model price (docs/brama.md#per-model-prices) replaces the
	// configured token prices for that debit only; instance time is priced
	// as configured.
	perModel := ask[messages.DebitResponse](t, system, pid, messages.DebitRequest{
		Usage:   chat.Usage{PromptTokens: 1200, CompletionTokens: 100, TotalTokens: 1300},
		Elapsed: 123400 * time.Microsecond,
		Prices:  &prices.Pair{Input: m("10"), Output: m("1")},
	})
	assert.Equal(t, "0.0121", perModel.API.String())
	assert.Equal(t, "0.000034277778", perModel.Instance.String())
	remaining := func() string {
		return ask[messages.Description](t, system, pid, messages.DescribeRequest{}).Figures["remaining"].(string)
	}
	assert.Equal(t, "0.01", remaining(), "pricing takes nothing before the debit is durable")
	system.Root.Send(pid, messages.CostDebited{API: deb.API, Instance: deb.Instance, Tokens: deb.Tokens})
	assert.Equal(t, "0.004865722222", remaining())

	none := ask[messages.CreditResponse](t, system, pid, messages.CreditRequest{Tool: "echo__x", Result: json.RawMessage(`{"revenue_usd":"5"}`)})
	assert.False(t, none.Credited)
	assert.True(t, none.Amount.IsZero())

	cr := ask[messages.CreditResponse](t, system, pid, messages.CreditRequest{Tool: "finance__sell", Result: json.RawMessage(`{"sale":{"revenue_usd":0.5}}`)})
	assert.True(t, cr.Credited)
	assert.Equal(t, "0.5", cr.Amount.String())
	assert.Equal(t, "finance__sell", cr.Source)
	assert.Equal(t, "0.004865722222", remaining(), "nothing is credited before the credit is durable")
	system.Root.Send(pid, messages.RevenueCredited{Amount: cr.Amount})

	desc = ask[messages.Description](t, system, pid, messages.DescribeRequest{})
	assert.Equal(t, messages.Description{Kind: "ledger", Name: "ledger", Status: StatusSolvent, Figures: map[string]any{
		"remaining": "0.504865722222", "spent": "0.005134277778", "earned": "0.5", "starting": "0.01", "granted": "0",
	}}, desc)
	b := state.Budget{Starting: m("0.01"), Remaining: m("0.01")}.Debit(deb.API, deb.Instance, deb.Tokens).Credit(cr.Amount)
	assert.NoError(t, testkit.CheckInvariant(b, []state.Event{
		state.Debited(state.Now(), 1, deb.API, deb.Instance, deb.Tokens),
		state.RevenueCredited(state.Now(), 1, cr.Amount, cr.Source),
	}))

	// Spend it all: insolvent at exactly zero and below.
	big := ask[messages.DebitResponse](t, system, pid, messages.DebitRequest{Usage: chat.Usage{CompletionTokens: 1_000_000, TotalTokens: 1_000_000}})
	system.Root.Send(pid, messages.CostDebited{API: big.API, Instance: big.Instance, Tokens: big.Tokens})
	desc = ask[messages.Description](t, system, pid, messages.DescribeRequest{})
	assert.Equal(t, StatusExhausted, desc.Status)
	assert.Equal(t, "-14.495134277778", desc.Figures["remaining"])
}

func TestSolvencyAtZero(t *testing.T) {
	assert.False(t, solvent(state.Budget{Starting: m("1"), Remaining: m("0")}))
	assert.True(t, solvent(state.Budget{Starting: m("1"), Remaining: m("0.000000000001")}))
}

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
