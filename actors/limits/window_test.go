package limits

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/test/testkit"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func amount(s string) *money.Amount { a := testkit.USD(s); return &a }

func TestWindowFamilyLimit(t *testing.T) {
	w := Window{Family: amount("0.01")}
	m := testkit.USD
	a, _, ok := w.Admit("a", m("0.004"), nil, t0)
	require.True(t, ok)
	b, _, ok := w.Admit("b", m("0.004"), nil, t0.Add(time.Minute))
	require.True(t, ok)
	_, retry, ok := w.Admit("c", m("0.004"), nil, t0.Add(2*time.Minute))
	require.False(t, ok, "0.012 would pass 0.01")
	require.Equal(t, t0.Add(time.Hour), retry, "room comes when a's reservation leaves the window")

	// Settling replaces the reservation with the cost, counted from then.
	w.Settle(a, m("0.001"), t0.Add(3*time.Minute))
	_, _, ok = w.Admit("c", m("0.004"), nil, t0.Add(4*time.Minute))
	require.True(t, ok, "0.001 + 0.004 + 0.004 fits")
	require.Equal(t, "0.009", w.Spent(t0.Add(4*time.Minute)).String())
	w.Settle(b, money.Zero, t0.Add(5*time.Minute)) // a call that cost nothing
	require.Equal(t, "0.005", w.Spent(t0.Add(5*time.Minute)).String())

	// An hour after the settle, the cost no longer counts.
	require.Equal(t, "0.004", w.Spent(t0.Add(3*time.Minute+time.Hour)).String())
	require.Equal(t, "0", w.Spent(t0.Add(4*time.Minute+time.Hour)).String())
}

func TestWindowBeingLimit(t *testing.T) {
	var w Window // no family limit
	m := testkit.USD
	own := amount("0.005")
	_, _, ok := w.Admit("a", m("0.004"), own, t0)
	require.True(t, ok)
	_, retry, ok := w.Admit("a", m("0.004"), own, t0.Add(time.Second))
	require.False(t, ok, "a's own limit")
	require.Equal(t, t0.Add(time.Hour), retry)
	_, _, ok = w.Admit("b", m("0.004"), own, t0.Add(time.Second))
	require.True(t, ok, "b's limit is its own")
	_, _, ok = w.Admit("c", m("1"), nil, t0.Add(time.Second))
	require.True(t, ok, "no limit for c")
}

func TestWindowLargeReservation(t *testing.T) {
	w := Window{Family: amount("0.01")}
	m := testkit.USD
	_, _, ok := w.Admit("a", m("0.02"), nil, t0)
	require.True(t, ok, "larger than the limit, but nothing else counts: never stuck for good")
	_, retry, ok := w.Admit("a", m("0.02"), nil, t0.Add(time.Minute))
	require.False(t, ok)
	require.Equal(t, t0.Add(time.Hour), retry, "it waits until the window is empty")
	_, _, ok = w.Admit("a", m("0.02"), nil, retry)
	require.True(t, ok, "and then goes ahead")
}

func TestWindowRetryAtTheEarliestFit(t *testing.T) {
	w := Window{Family: amount("0.01")}
	m := testkit.USD
	for i, c := range []string{"0.003", "0.003", "0.003"} {
		_, _, ok := w.Admit("a", m(c), nil, t0.Add(time.Duration(i)*10*time.Minute))
		require.True(t, ok)
	}
	_, retry, ok := w.Admit("b", m("0.005"), nil, t0.Add(30*time.Minute))
	require.False(t, ok)
	require.Equal(t, t0.Add(70*time.Minute), retry, "two of the three must leave for 0.005 to fit")
}
