package prices

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
)

func pair(in, out string) Pair { return Pair{Input: mustParse(in), Output: mustParse(out)} }

// mustParse is money.Parse for an amount the test writes down.
func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestParse(t *testing.T) {
	good := `{"small": {"input_usd_per_million": "0.15", "output_usd_per_million": "0.6"},
	          "large": {"input_usd_per_million": "2.5", "output_usd_per_million": "10"}}`
	table, err := Parse([]byte(good))
	require.NoError(t, err)
	require.Len(t, table, 2)
	assert.Equal(t, "0.15", table["small"].Input.String())
	assert.Equal(t, "10", table["large"].Output.String())

	empty, err := Parse([]byte(`{}`))
	require.NoError(t, err)
	assert.Empty(t, empty)

	bad := []struct{ text, want string }{
		{`[]`, "must be a JSON object of model prices"},
		{`null`, "must be a JSON object of model prices"},
		{`{} {}`, "must be a JSON object of model prices"},
		{`{"m": "1"}`, `model "m": must be an object with input_usd_per_million and output_usd_per_million`},
		{`{"m": {"input_usd_per_million": "1"}}`, `model "m": output_usd_per_million is required`},
		{`{"m": {"input_usd_per_million": 1, "output_usd_per_million": "1"}}`, `model "m": input_usd_per_million must be a decimal string`},
		{`{"m": {"input_usd_per_million": "x", "output_usd_per_million": "1"}}`, `model "m": input_usd_per_million must be a decimal string`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "-1"}}`, `model "m": output_usd_per_million cannot be negative`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cached": "1"}}`, `model "m": unknown field "cached"`},
		{`{"": {"input_usd_per_million": "1", "output_usd_per_million": "1"}}`, "a model id is empty"},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1"}, "n": {"input_usd_per_million": "1", "output_usd_per_million": "1"}, "m": {"input_usd_per_million": "2", "output_usd_per_million": "2"}}`, `model "m" is listed twice`},
		{`{"m": {"input_usd_per_million": "1e400", "output_usd_per_million": "1"}}`, `model "m": input_usd_per_million is out of range`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1e99999999999999999999"}}`, `model "m": output_usd_per_million is out of range`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "12345678901234567890123456789012345678901234567890"}}`, `model "m": output_usd_per_million is out of range`},
	}
	for _, c := range bad {
		_, err := Parse([]byte(c.text))
		if assert.Error(t, err, c.text) {
			assert.Equal(t, c.want, err.Error(), c.text)
		}
	}
}

func TestLookup(t *testing.T) {
	table := Table{"small": pair("0.15", "0.6"), "large": pair("2.5", "10")}
	cases := []struct {
		response, requested string
		want                Pair
		ok                  bool
	}{
		{"large", "small", pair("2.5", "10"), true},        // the response's model wins
		{"large-2026", "small", pair("0.15", "0.6"), true}, // unlisted response: the requested model
		{"", "large", pair("2.5", "10"), true},
		{"other", "other", Pair{}, false}, // neither: the two variables
	}
	for _, c := range cases {
		got, ok := table.Lookup(c.response, c.requested)
		assert.Equal(t, c.ok, ok, "%s/%s", c.response, c.requested)
		if ok {
			assert.Equal(t, c.want.Input.String(), got.Input.String())
			assert.Equal(t, c.want.Output.String(), got.Output.String())
		}
	}
	_, ok := Table(nil).Lookup("a", "b")
	assert.False(t, ok)
}

func TestReservation(t *testing.T) {
	table := Table{"small": pair("0.15", "12"), "large": pair("2.5", "10")}
	fallback := pair("1", "1")
	got := table.Reservation("small", fallback)
	assert.Equal(t, "0.15/12", got.Input.String()+"/"+got.Output.String())
	// A selector: the highest of each price, separately, over the table
	// and the configured pair.
	got = table.Reservation("any", fallback)
	assert.Equal(t, "2.5/12", got.Input.String()+"/"+got.Output.String())
	got = table.Reservation("any", pair("3", "0"))
	assert.Equal(t, "3/12", got.Input.String()+"/"+got.Output.String())
	got = Table(nil).Reservation("any", fallback)
	assert.Equal(t, "1/1", got.Input.String()+"/"+got.Output.String())
}
