package budget

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/testkit"
)

var m = testkit.USD

func TestComputeDebit(t *testing.T) {
	tests := []struct {
		name                 string
		p                    Pricing
		u                    chat.Usage
		elapsed              time.Duration
		api, instance, total string
		tokens               uint64
	}{
		{"all prices zero", Pricing{}, chat.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010}, time.Second,
			"0", "0", "0", 1010},
		{"tokens exact", Pricing{InputPerMillion: m("3"), OutputPerMillion: m("15")}, chat.Usage{PromptTokens: 1200, CompletionTokens: 100, TotalTokens: 1300}, 0,
			"0.0051", "0", "0.0051", 1300},
		{"tokens rounded up", Pricing{InputPerMillion: m("0.000001")}, chat.Usage{PromptTokens: 1, TotalTokens: 1}, 0,
			"0.000000000001", "0", "0.000000000001", 1},
		{"instance 123.4 s at 1 USD/h", Pricing{InstancePerHour: m("1")}, chat.Usage{}, 123400 * time.Millisecond,
			"0", "0.034277777778", "0.034277777778", 0},
		{"instance 123.4 ms at 1 USD/h", Pricing{InstancePerHour: m("1")}, chat.Usage{}, 123400 * time.Microsecond,
			"0", "0.000034277778", "0.000034277778", 0},
		{"instance one ns", Pricing{InstancePerHour: m("0.01")}, chat.Usage{}, time.Nanosecond,
			"0", "0.000000000001", "0.000000000001", 0},
		{"negative elapsed is zero", Pricing{InstancePerHour: m("5")}, chat.Usage{}, -time.Hour,
			"0", "0", "0", 0},
		{"both parts rounded before adding", Pricing{InputPerMillion: m("0.0000005"), InstancePerHour: m("0.0000036")}, chat.Usage{PromptTokens: 1, TotalTokens: 1}, time.Nanosecond,
			"0.000000000001", "0.000000000001", "0.000000000002", 1},
		{"zero total uses the parts", Pricing{}, chat.Usage{PromptTokens: 7, CompletionTokens: 3}, 0,
			"0", "0", "0", 10},
		{"huge token counts", Pricing{InputPerMillion: m("2.5"), OutputPerMillion: m("10")}, chat.Usage{PromptTokens: math.MaxUint64, CompletionTokens: math.MaxUint64, TotalTokens: math.MaxUint64}, 0,
			"230584300921369.3951875", "0", "230584300921369.3951875", math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ComputeDebit(tt.p, tt.u, tt.elapsed)
			assert.Equal(t, tt.api, d.API.String(), "api")
			assert.Equal(t, tt.instance, d.Instance.String(), "instance")
			assert.Equal(t, tt.total, d.Amount.String(), "amount")
			assert.Equal(t, tt.tokens, d.Tokens)
		})
	}
}

func TestApplyDebitAndCredit(t *testing.T) {
	b := state.Budget{Starting: m("10"), Remaining: m("10"), TotalTokens: math.MaxUint64 - 5}
	b = ApplyDebit(b, Debit{API: m("0.015"), Instance: m("0.005"), Amount: m("0.02"), Tokens: 100})
	assert.Equal(t, "9.98", b.Remaining.String())
	assert.Equal(t, "0.015", b.APISpent.String())
	assert.Equal(t, "0.005", b.InstanceSpent.String())
	assert.Equal(t, uint64(math.MaxUint64), b.TotalTokens, "saturating")
	assert.Equal(t, "-0.02", b.NetProfit().String())

	b, err := ApplyCredit(b, m("1.5"))
	require.NoError(t, err)
	assert.Equal(t, "11.48", b.Remaining.String())
	assert.Equal(t, "1.5", b.Earned.String())

	_, err = ApplyCredit(b, m("-0.01"))
	require.Error(t, err)
	assert.Equal(t, "state: revenue cannot be negative", err.Error())
	assert.Equal(t, fault.ClassState, fault.ClassOf(err))
}

// TestComputeDebitCachedTokens is docs/money.md#debit with a cache: the
// uncached prompt tokens at the input price, the cached ones at the
// cached price, cache writes at the write price, summed exactly and
// rounded once.
func TestComputeDebitCachedTokens(t *testing.T) {
	cached, write := m("0.3"), m("3.75")
	p := Pricing{InputPerMillion: m("3"), OutputPerMillion: m("15"), CachedInputPerMillion: &cached, CacheWriteInputPerMillion: &write}
	tests := []struct {
		name string
		p    Pricing
		u    chat.Usage
		api  string
	}{
		{"no cache is as before", p, chat.Usage{PromptTokens: 1200, CompletionTokens: 100, TotalTokens: 1300}, "0.0051"},
		// 976×3 + 1024×0.3 + 100×15 = 2928 + 307.2 + 1500.
		{"cached at the cached price", p, chat.Usage{PromptTokens: 2000, CompletionTokens: 100, CachedTokens: 1024}, "0.0047352"},
		// 500×3 + 500×0.3 + 1000×3.75 + 10×15 = 1500 + 150 + 3750 + 150.
		{"writes at the write price", p, chat.Usage{PromptTokens: 2000, CompletionTokens: 10, CachedTokens: 500, CacheWriteTokens: 1000}, "0.00555"},
		{"reasoning tokens are completion tokens", p, chat.Usage{PromptTokens: 0, CompletionTokens: 100, ReasoningTokens: 90}, "0.0015"},
		{"unset cache prices are the input price", Pricing{InputPerMillion: m("3"), OutputPerMillion: m("15")},
			chat.Usage{PromptTokens: 2000, CompletionTokens: 10, CachedTokens: 500, CacheWriteTokens: 1000}, "0.00615"},
		{"free cache reads", Pricing{InputPerMillion: m("1"), CachedInputPerMillion: new(money.Amount)}, chat.Usage{PromptTokens: 3, CachedTokens: 2}, "0.000001"},
		{"the smallest cached price rounds up once", Pricing{InputPerMillion: m("1"), CachedInputPerMillion: ptr(m("0.0000001"))},
			chat.Usage{PromptTokens: 1, CachedTokens: 1}, "0.000000000001"},
		// A count the prompt cannot hold is cut to fit: cached first.
		{"cached cut to the prompt", p, chat.Usage{PromptTokens: 10, CachedTokens: 11, CacheWriteTokens: 5}, "0.000003"},
		{"writes cut to the rest", p, chat.Usage{PromptTokens: 10, CachedTokens: 4, CacheWriteTokens: math.MaxUint64}, "0.0000237"},
		{"huge cached counts", p, chat.Usage{PromptTokens: math.MaxUint64, CachedTokens: math.MaxUint64 - 1}, "5534023222112.8654872"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.api, ComputeDebit(tt.p, tt.u, 0).API.String())
		})
	}
}

func ptr(a money.Amount) *money.Amount { return &a }

func TestPricingValidate(t *testing.T) {
	assert.NoError(t, Pricing{}.Validate())
	err := Pricing{InstancePerHour: m("-1")}.Validate()
	assert.EqualError(t, err, "configuration: prices and balance cannot be negative")
	assert.Error(t, Pricing{InputPerMillion: m("-0.1")}.Validate())
	assert.Error(t, Pricing{CachedInputPerMillion: ptr(m("-0.1"))}.Validate())
	assert.Error(t, Pricing{CacheWriteInputPerMillion: ptr(m("-0.1"))}.Validate())
}

func TestRevenue(t *testing.T) {
	tests := []struct {
		name, tool, result string
		want               string // "" means no credit
	}{
		{"finance string", "finance__sell", `{"revenue_usd": "2.5"}`, "2.5"},
		{"trading number", "trading__close", `{"realized_profit_usd": 0.75}`, "0.75"},
		{"wrong prefix", "echo__say", `{"revenue_usd": "2.5"}`, ""},
		{"prefix without separator", "finance_sell", `{"revenue_usd": "2.5"}`, ""},
		{"prefix not at start", "x_finance__sell", `{"revenue_usd": "2.5"}`, ""},
		{"builtin", "singularity_file_write", `{"revenue_usd": "2.5"}`, ""},
		{"nested in objects", "finance__a", `{"result": {"deal": {"revenue_usd": "3"}}}`, "3"},
		{"nested in arrays", "finance__a", `[1, [{"x": 2}, {"realized_profit_usd": "4.25"}]]`, "4.25"},
		{"zero skipped", "finance__a", `{"revenue_usd": 0, "more": {"revenue_usd": "1"}}`, "1"},
		{"negative skipped", "finance__a", `{"revenue_usd": "-5", "realized_profit_usd": "0.5"}`, "0.5"},
		{"non-numeric skipped", "finance__a", `{"revenue_usd": "lots", "x": [{"revenue_usd": "2 USD"}], "y": {"revenue_usd": true}, "z": {"revenue_usd": null}, "w": {"revenue_usd": "NaN"}}`, ""},
		{"only zero and negative", "finance__a", `{"revenue_usd": "0.000", "realized_profit_usd": -1}`, ""},
		{"first match wins", "finance__a", `{"b": {"revenue_usd": "1"}, "a": {"revenue_usd": "2"}}`, "1"},
		{"first match wins across kinds", "finance__a", `{"realized_profit_usd": "7", "revenue_usd": "1"}`, "7"},
		{"document order, not key order", "finance__a", `{"z": {"realized_profit_usd": 9}, "a": {"revenue_usd": 1}}`, "9"},
		{"depth-first", "finance__a", `{"a": {"b": {"revenue_usd": "1"}}, "revenue_usd": "2"}`, "1"},
		{"value object is searched", "finance__a", `{"revenue_usd": {"revenue_usd": "6"}}`, "6"},
		{"key match is exact", "finance__a", `{"Revenue_USD": "1", "revenue_usd_total": "2", "x_revenue_usd": "3"}`, ""},
		{"string value with key name", "finance__a", `{"note": "revenue_usd", "list": ["revenue_usd", "5"]}`, ""},
		{"rounded down", "finance__a", `{"revenue_usd": "0.1234567890129"}`, "0.123456789012"},
		{"number beyond float64", "finance__a", `{"revenue_usd": 0.100000000000000000000001}`, "0.1"},
		{"exponent number", "finance__a", `{"revenue_usd": 2.5e-3}`, "0.0025"},
		{"first positive below resolution credits nothing", "finance__a", `{"revenue_usd": "1e-13", "b": {"revenue_usd": "1"}}`, ""},
		{"malformed json", "finance__a", `{"revenue_usd": `, ""},
		{"malformed after match", "finance__a", `{"revenue_usd": "1", `, "1"},
		{"not json", "finance__a", `revenue_usd: 5`, ""},
		{"scalar", "finance__a", `"5"`, ""},
		{"empty", "finance__a", ``, ""},
		{"out of range", "finance__a", `{"revenue_usd": "1e999999999", "b": {"revenue_usd": "1"}}`, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := Revenue(tt.tool, []byte(tt.result))
			if tt.want == "" {
				assert.False(t, ok, "credited %s", v)
				assert.True(t, v.IsZero())
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, v.String())
		})
	}
}
