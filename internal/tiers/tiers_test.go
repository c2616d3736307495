package tiers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
)

func usd(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestParse(t *testing.T) {
	got, err := Parse([]byte(`[
	  {"below_usd": "5", "cycle_interval_secs": 30},
	  {"below_usd": "1", "model": "cheap-model", "cycle_interval_secs": 60.5, "max_tool_rounds": 4}
	]`))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.True(t, got[0].Below.Equal(usd("5")))
	assert.Equal(t, 30*time.Second, got[0].CycleInterval)
	assert.Equal(t, Tier{Below: got[1].Below, Model: "cheap-model", CycleInterval: 60500 * time.Millisecond, IntervalSet: true, MaxToolRounds: 4}, got[1])

	empty, err := Parse([]byte(`[]`))
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func TestParseRefusals(t *testing.T) {
	tests := []struct{ name, in, err string }{
		{"not a list", `{"below_usd": "1"}`, "must be a JSON list of tiers"},
		{"null", `null`, "must be a JSON list of tiers"},
		{"trailing data", `[] []`, "must be a JSON list of tiers"},
		{"not an object", `[1]`, "tier 1: must be an object with below_usd"},
		{"no bound", `[{"model": "m"}]`, "tier 1: below_usd is required"},
		{"bound a number", `[{"below_usd": 1}]`, "tier 1: below_usd must be a decimal string"},
		{"bound not decimal", `[{"below_usd": "one"}]`, "tier 1: below_usd must be a decimal string"},
		{"bound zero", `[{"below_usd": "0"}]`, "tier 1: below_usd must be above zero"},
		{"bound negative", `[{"below_usd": "-1"}]`, "tier 1: below_usd must be above zero"},
		{"bound out of range", `[{"below_usd": "1e999999"}]`, "tier 1: below_usd is out of range"},
		{"same bound", `[{"below_usd": "1"}, {"below_usd": "1.0"}]`, "tier 2: below_usd 1 is tier 1's too"},
		{"unknown field", `[{"below_usd": "1", "modle": "m"}]`, `tier 1: unknown field "modle"`},
		{"repeated field", `[{"below_usd": "1", "below_usd": "2"}]`, "tier 1: below_usd is given twice"},
		{"empty model", `[{"below_usd": "1", "model": ""}]`, "tier 1: model must be a model id"},
		{"negative interval", `[{"below_usd": "1", "cycle_interval_secs": -1}]`, "tier 1: cycle_interval_secs must be a number of seconds ≥ 0"},
		{"interval a string", `[{"below_usd": "1", "cycle_interval_secs": "60"}]`, "tier 1: cycle_interval_secs must be a number of seconds ≥ 0"},
		{"huge interval", `[{"below_usd": "1", "cycle_interval_secs": 1e300}]`, "tier 1: cycle_interval_secs must be a number of seconds ≥ 0"},
		{"zero rounds", `[{"below_usd": "1", "max_tool_rounds": 0}]`, "tier 1: max_tool_rounds must be an integer ≥ 1"},
		{"fractional rounds", `[{"below_usd": "1", "max_tool_rounds": 1.5}]`, "tier 1: max_tool_rounds must be an integer ≥ 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			require.Error(t, err)
			assert.Equal(t, tt.err, err.Error())
		})
	}
}

func TestFor(t *testing.T) {
	table := Table{{Below: usd("5")}, {Below: usd("1")}, {Below: usd("2.5")}}
	tests := []struct {
		remaining string
		tier      int
	}{
		{"10", 0},
		{"5", 0}, // below, not at
		{"4.99", 1},
		{"2.5", 1},
		{"2.49", 3},
		{"1", 3},
		{"0.99", 2},
		{"0", 2},
		{"-0.01", 2},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.tier, table.For(usd(tt.remaining)), "remaining %s", tt.remaining)
	}
	assert.Equal(t, 0, Table(nil).For(usd("0")))
	tier, ok := table.Get(2)
	assert.True(t, ok)
	assert.True(t, tier.Below.Equal(usd("1")))
	_, ok = table.Get(0)
	assert.False(t, ok)
	_, ok = table.Get(4)
	assert.False(t, ok)
}

func TestFallback(t *testing.T) {
	table := Table{
		{Below: usd("5"), Model: "mid"},
		{Below: usd("1"), Model: "cheap"},
		{Below: usd("2.5")}, // no model
		{Below: usd("0.5"), Model: "mid"},
	}
	tests := []struct {
		name, remaining, refused, want string
	}{
		{"tier model, then the tier above", "0.9", "cheap", "mid"},
		{"the tier above, then base", "0.9", "mid", "base"},
		{"base ends the line", "0.9", "base", ""},
		{"a model of its own: the tier's first", "0.9", "chosen", "cheap"},
		{"a model named twice is tried once", "0.1", "mid", "cheap"},
		{"after it, base", "0.1", "cheap", "base"},
		{"no tier: base", "10", "chosen", "base"},
		{"no tier, base refused", "10", "base", ""},
		{"a tier without a model above", "2", "mid", "base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, table.Fallback(usd(tt.remaining), "base", tt.refused))
		})
	}
	assert.Equal(t, "", Table{{Below: usd("1"), Model: "base"}}.Fallback(usd("0"), "base", "base"), "base in a tier is one model")
	assert.Equal(t, "", Table(nil).Fallback(usd("0"), "", "x"), "no line at all")
}
