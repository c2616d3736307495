package testkit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

func TestUSD(t *testing.T) {
	assert.Equal(t, "0.000034277778", testkit.USD("0.000034277778").String())
	assert.Panics(t, func() { testkit.USD("ten") })
}

func TestCheckInvariant(t *testing.T) {
	m := testkit.USD
	at := state.Time{Time: time.Date(2026, 8, 24, 22, 5, 13, 0, time.UTC)}
	debit := func(cycle uint64, amount money.Amount) state.Event {
		return state.Debited(at, cycle, amount, money.Zero, 0)
	}
	events := []state.Event{
		state.Started(at),
		debit(1, m("0.02")),
		state.RevenueCredited(at, 1, m("1.5"), "finance__sell"),
		debit(2, m("0.000034277778")),
		debit(2, money.Zero),
		state.Warning(at, 2, "x"),
	}
	good := state.Budget{Starting: m("10"), Remaining: m("11.479965722222"), APISpent: m("0.02"), InstanceSpent: m("0.000034277778"), Earned: m("1.5")}
	tests := []struct {
		name   string
		budget state.Budget
		events []state.Event
		want   string
	}{
		{"holds", good, events, ""},
		{"fresh", state.Budget{Starting: m("10"), Remaining: m("10")}, nil, ""},
		{"journal ahead", good, append(events[:len(events):len(events)], debit(3, m("0.000000000001"))),
			"ledger invariant violated: remaining 11.479965722222, but starting 10 + funded 0 − debited 0.020034277779 + credited 1.5 − granted 0 = 11.479965722221"},
		{"split inconsistent", func() state.Budget { b := good; b.APISpent = m("0.01"); return b }(), events,
			"ledger invariant violated: remaining 11.479965722222, but starting + funded − spent + earned − granted = 11.489965722222"},
		{"granted", func() state.Budget { b := good; b.Remaining = m("11.379965722222"); b.Granted = m("0.1"); return b }(),
			append(events[:len(events):len(events)], state.EndowmentGranted(state.Child{ID: "c1"}, m("0.1"))), ""},
		{"grant not journaled", func() state.Budget { b := good; b.Remaining = m("11.379965722222"); b.Granted = m("0.1"); return b }(), events,
			"ledger invariant violated: remaining 11.379965722222, but starting 10 + funded 0 − debited 0.020034277778 + credited 1.5 − granted 0 = 11.479965722222"},
		{"granted but not by the journal", func() state.Budget { b := good; b.Remaining = m("11.379965722222"); b.Granted = m("0.1"); return b }(),
			append(events[:len(events):len(events)], debit(3, m("0.1"))),
			"ledger invariant violated: granted 0.1, but the journal's grants sum to 0"},
		{"funded", func() state.Budget { b := good; b.Remaining = m("12.479965722222"); b.Funded = m("1"); return b }(),
			append(events[:len(events):len(events)], state.Funded(at, 3, m("1"), "k", "")), ""},
		{"funded but not by the journal", func() state.Budget { b := good; b.Remaining = m("12.479965722222"); b.Funded = m("1"); return b }(), events,
			"ledger invariant violated: remaining 12.479965722222, but starting 10 + funded 0 − debited 0.020034277778 + credited 1.5 − granted 0 = 11.479965722222"},
		{"negative earned", func() state.Budget { b := good; b.Earned = m("-1"); return b }(), events,
			"ledger invariant violated: budget earned is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testkit.CheckInvariant(tt.budget, tt.events)
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}
