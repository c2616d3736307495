package accounts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

func budget(starting, remaining, api, instance, earned, granted string) state.Budget {
	m := testkit.USD
	return state.Budget{Starting: m(starting), Remaining: m(remaining), APISpent: m(api), InstanceSpent: m(instance), Earned: m(earned), Granted: m(granted)}
}

// sum adds up entries.
func sum(entries []Entry) Totals {
	var t Totals
	for _, e := range entries {
		t.Add(e)
	}
	return t
}

func TestSum(t *testing.T) {
	// The root starts with 10, spends 0.5, earns 1 and grants 3 and 2;
	// the first child spends 0.25 and earns 0.5; the second grant's child
	// is not created yet.
	root := Entry{Root: true, Budget: budget("10", "5.5", "0.4", "0.1", "1", "5"), InTransit: testkit.USD("2")}
	child := Entry{Budget: budget("3", "3.25", "0.25", "0", "0.5", "0")}
	tests := []struct {
		name    string
		entries []Entry
		verdict string
	}{
		{"conserved", []Entry{root, child}, "exact"},
		{"a child holding too much", []Entry{root, {Budget: budget("3", "3.75", "0.25", "0", "0.5", "0")}}, "off by 0.5"},
		{"a child missing", []Entry{root}, "off by -3"},
		{"empty", nil, "exact"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.verdict, sum(tc.entries).Verdict())
		})
	}
	tot := sum([]Entry{root, child})
	require.Equal(t, "10", tot.Starting.String())
	require.Equal(t, "5", tot.Granted.String())
	require.Equal(t, "0.75", tot.Spent.String())
	require.Equal(t, "1.5", tot.Earned.String())
	require.Equal(t, "8.75", tot.Remaining.String())
	require.Equal(t, "2", tot.InTransit.String())
	require.Equal(t, 2, tot.Beings)
	require.True(t, root.Off().IsZero())
	require.Equal(t, "0.5", Entry{Budget: budget("3", "3.75", "0.25", "0", "0.5", "0")}.Off().String())
}
