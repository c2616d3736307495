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
		{`{"m": {"input_usd_per_million": "100", "output_usd_per_million": "1", "input_usd_per_million": "0"}}`, `model "m": input_usd_per_million is given twice`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cached_input_usd_per_million": "0", "cached_input_usd_per_million": "0"}}`, `model "m": cached_input_usd_per_million is given twice`},
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
		got, ok, _ := Book{File: table}.Lookup(c.response, c.requested)
		assert.Equal(t, c.ok, ok, "%s/%s", c.response, c.requested)
		if ok {
			assert.Equal(t, c.want.Input.String(), got.Input.String())
			assert.Equal(t, c.want.Output.String(), got.Output.String())
		}
	}
	_, ok, _ := Book{}.Lookup("a", "b")
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

// text is p's four prices as "input/output/cached/write".
func text(p Pair) string {
	return p.Input.String() + "/" + p.Output.String() + "/" + p.Cached().String() + "/" + p.CacheWrite().String()
}

func TestCachePrices(t *testing.T) {
	table, err := Parse([]byte(`{
	  "cached":   {"input_usd_per_million": "3", "output_usd_per_million": "15", "cached_input_usd_per_million": "0.3", "cache_write_input_usd_per_million": "3.75"},
	  "readonly": {"input_usd_per_million": "2", "output_usd_per_million": "8", "cached_input_usd_per_million": "0.5"},
	  "plain":    {"input_usd_per_million": "1", "output_usd_per_million": "2"}}`))
	require.NoError(t, err)
	assert.Equal(t, "3/15/0.3/3.75", text(table["cached"]))
	assert.Equal(t, "2/8/0.5/2", text(table["readonly"]), "a missing cache-write price is the input price")
	assert.Equal(t, "1/2/1/1", text(table["plain"]), "both cache prices default to the input price")
	assert.Nil(t, table["plain"].CachedInput)
	assert.Nil(t, table["plain"].CacheWriteInput)

	assert.Equal(t, "3.75", table["cached"].PromptWorst().String(), "a cache write may cost more than input")
	assert.Equal(t, "2", table["readonly"].PromptWorst().String())
	assert.Equal(t, "1", pair("1", "9").PromptWorst().String())

	// A selector reserves at the highest of each price, each on its own:
	// plain pays its input price, 1, for a cached token.
	got := table.Reservation("any", pair("0.1", "20"))
	assert.Equal(t, "3/20/1/3.75", text(got))
	assert.Equal(t, "3.75", got.PromptWorst().String())
	assert.Equal(t, "1/2/1/1", text(Table{"a": pair("1", "2")}.Reservation("any", pair("0", "0"))))

	for _, c := range []struct{ text, want string }{
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cached_input_usd_per_million": "-0.1"}}`, `model "m": cached_input_usd_per_million cannot be negative`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cached_input_usd_per_million": 0.1}}`, `model "m": cached_input_usd_per_million must be a decimal string`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cache_write_input_usd_per_million": "1e400"}}`, `model "m": cache_write_input_usd_per_million is out of range`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cache_write_input_usd_per_million": null}}`, `model "m": cache_write_input_usd_per_million must be a decimal string`},
		{`{"m": {"input_usd_per_million": "1", "output_usd_per_million": "1", "cached_usd_per_million": "1"}}`, `model "m": unknown field "cached_usd_per_million"`},
	} {
		_, err := Parse([]byte(c.text))
		if assert.Error(t, err, c.text) {
			assert.Equal(t, c.want, err.Error(), c.text)
		}
	}
}
