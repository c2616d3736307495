package state

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/store/money"
)

// CostDebited is the reference runtime's debit, all of it API spending:
// a cost_debited with its amount alone.
func CostDebited(at Time, cycle uint64, amount money.Amount) Event {
	return Debited(at, cycle, amount, money.Zero, 0)
}

func TestCheckInvariant(t *testing.T) {
	m := money.MustParse
	events := []Event{
		Started(at),
		CostDebited(at, 1, m("0.02")),
		RevenueCredited(at, 1, m("1.5"), "finance__sell"),
		CostDebited(at, 2, m("0.000034277778")),
		CostDebited(at, 2, money.Zero),
		Warning(at, 2, "x"),
	}
	good := Budget{Starting: m("10"), Remaining: m("11.479965722222"), APISpent: m("0.02"), InstanceSpent: m("0.000034277778"), Earned: m("1.5")}
	tests := []struct {
		name   string
		budget Budget
		events []Event
		want   string
	}{
		{"holds", good, events, ""},
		{"fresh", Budget{Starting: m("10"), Remaining: m("10")}, nil, ""},
		{"journal ahead", good, append(events[:len(events):len(events)], CostDebited(at, 3, m("0.000000000001"))),
			"state: ledger invariant violated: remaining 11.479965722222, but starting 10 − debited 0.020034277779 + credited 1.5 − granted 0 = 11.479965722221"},
		{"split inconsistent", func() Budget { b := good; b.APISpent = m("0.01"); return b }(), events,
			"state: ledger invariant violated: remaining 11.479965722222, but starting − spent + earned − granted = 11.489965722222"},
		{"granted", func() Budget { b := good; b.Remaining = m("11.379965722222"); b.Granted = m("0.1"); return b }(),
			append(events[:len(events):len(events)], EndowmentGranted(Child{ID: "c1"}, m("0.1"))), ""},
		{"grant not journaled", func() Budget { b := good; b.Remaining = m("11.379965722222"); b.Granted = m("0.1"); return b }(), events,
			"state: ledger invariant violated: remaining 11.379965722222, but starting 10 − debited 0.020034277778 + credited 1.5 − granted 0 = 11.479965722222"},
		{"negative earned", func() Budget { b := good; b.Earned = m("-1"); return b }(), events,
			"state: ledger invariant violated: budget earned is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckInvariant(tt.budget, tt.events)
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}
