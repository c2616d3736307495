// Package budget is the pure arithmetic of a being's money
// (docs/money.md): what a completion costs (ComputeDebit), what a round
// reserves before it asks for one (Pricing.Reserve), what revenue a
// trusted tool result carries (Revenue), and how a budget saved without
// journal_seq catches up with its journal (Recover). It keeps no state and
// does no I/O: the being calls it where it decides, journals what it
// decided, and applies the step once it is durable (state.Being.Apply,
// the one rule by which a budget changes).
package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// Pricing is what a being pays (docs/configuration.md#variables): per million
// prompt and completion tokens, per million prompt tokens the provider
// served from its cache or wrote to it, and per hour of instance time spent
// in Brama calls. Zero prices make debits zero. Prices must not be negative.
type Pricing struct {
	InputPerMillion  money.Amount
	OutputPerMillion money.Amount
	InstancePerHour  money.Amount
	// CachedInputPerMillion and CacheWriteInputPerMillion price cached and
	// cache-write prompt tokens; nil means InputPerMillion.
	CachedInputPerMillion     *money.Amount
	CacheWriteInputPerMillion *money.Amount
}

// Tokens is p's token prices as a prices.Pair.
func (p Pricing) Tokens() prices.Pair {
	return prices.Pair{Input: p.InputPerMillion, Output: p.OutputPerMillion,
		CachedInput: p.CachedInputPerMillion, CacheWriteInput: p.CacheWriteInputPerMillion}
}

// WithTokens is p with its token prices replaced by t (a completion's
// per-model prices, docs/brama.md#per-model-prices); the instance price
// stays.
func (p Pricing) WithTokens(t prices.Pair) Pricing {
	p.InputPerMillion, p.OutputPerMillion = t.Input, t.Output
	p.CachedInputPerMillion, p.CacheWriteInputPerMillion = t.CachedInput, t.CacheWriteInput
	return p
}

// Validate refuses negative prices with the configuration sentence.
func (p Pricing) Validate() error {
	t := p.Tokens()
	for _, v := range []money.Amount{t.Input, t.Output, t.Cached(), t.CacheWrite(), p.InstancePerHour} {
		if v.Sign() < 0 {
			return fault.New(fault.ClassConfiguration, "prices and balance cannot be negative")
		}
	}
	return nil
}

var (
	perMillion = money.FromInt(1_000_000)
	nsPerHour  = money.FromInt(int64(time.Hour)) // 3,600,000,000,000
)

// Debit is the cost of one completion.
type Debit struct {
	API      money.Amount // tokens × prices ÷ 1e6, rounded up to 12 places
	Instance money.Amount // elapsed ns × price/hour ÷ 3.6e12, rounded up
	Amount   money.Amount // API + Instance, exact
	Tokens   uint64       // added (saturating) to total_tokens
}

// ComputeDebit prices one completion (docs/money.md#debit): the uncached
// prompt tokens at the input price, the cached ones at the cached price,
// the cache writes at the cache-write price and the completion tokens at
// the output price, summed exactly, then divided by a million. Each part is
// rounded up to 12 places before they are added, so the budget's parts always
// sum to what was taken from remaining. Cache counts the prompt tokens
// cannot hold are cut to fit (cached first, then writes); the gateway
// never accepts such a usage. A negative elapsed time counts as
// zero. Tokens is usage.TotalTokens, or prompt + completion when a server
// reported a zero total.
func ComputeDebit(p Pricing, u chat.Usage, elapsed time.Duration) Debit {
	t := p.Tokens()
	cached := min(u.CachedTokens, u.PromptTokens)
	written := min(u.CacheWriteTokens, u.PromptTokens-cached)
	uncached := u.PromptTokens - cached - written
	tokens := money.FromUint(uncached).Mul(t.Input).
		Add(money.FromUint(u.CompletionTokens).Mul(t.Output))
	if cached > 0 {
		tokens = tokens.Add(money.FromUint(cached).Mul(t.Cached()))
	}
	if written > 0 {
		tokens = tokens.Add(money.FromUint(written).Mul(t.CacheWrite()))
	}
	api := tokens.QuoUp(perMillion)
	instance := money.FromInt(int64(max(elapsed, 0))).Mul(p.InstancePerHour).QuoUp(nsPerHour)
	total := u.TotalTokens
	if total == 0 {
		total = addSaturating(u.PromptTokens, u.CompletionTokens)
	}
	return Debit{API: api, Instance: instance, Amount: api.Add(instance), Tokens: total}
}

// ApplyDebit takes d from b: remaining −= amount, api_spent += api,
// instance_spent += instance, total_tokens += tokens (saturating).
func ApplyDebit(b state.Budget, d Debit) state.Budget {
	return b.Debit(d.API, d.Instance, d.Tokens)
}

func addSaturating(a, b uint64) uint64 { return state.AddSaturating(a, b) }

// ErrNegativeRevenue is the refusal of a negative credit.
var ErrNegativeRevenue = fault.New(fault.ClassState, "revenue cannot be negative")

// ApplyCredit adds revenue v to b: earned += v, remaining += v. A
// negative v is refused with "state: revenue cannot be negative".
func ApplyCredit(b state.Budget, v money.Amount) (state.Budget, error) {
	if v.Sign() < 0 {
		return b, ErrNegativeRevenue
	}
	return b.Credit(v), nil
}

// Trusted reports whether a tool's results may carry revenue: its name
// starts with "finance__" or "trading__".
func Trusted(tool string) bool {
	return strings.HasPrefix(tool, "finance__") || strings.HasPrefix(tool, "trading__")
}

// revenueKeys are the keys whose values are revenue evidence.
func revenueKey(k string) bool { return k == "revenue_usd" || k == "realized_profit_usd" }

// Revenue returns the credit that the result of tool earns
// (docs/money.md#credit): nothing unless the tool is trusted; otherwise the
// first value, in document order through nested objects and arrays, of a key
// revenue_usd or realized_profit_usd that is a decimal string or JSON number
// and strictly positive — rounded down to 12 places. Zero, negative and
// non-numeric values are skipped and the search goes on. A first positive
// value below 1e-12 rounds to zero and credits nothing. Numbers are read from
// their literal text, never through float64. Malformed JSON yields no credit
// beyond what was found before the fault.
func Revenue(tool string, result []byte) (money.Amount, bool) {
	if !Trusted(tool) {
		return money.Zero, false
	}
	v, ok := FindRevenue(result)
	if !ok {
		return money.Zero, false
	}
	v = v.RoundDown()
	return v, v.Sign() > 0
}

// FindRevenue is the search of Revenue without the trust check and the
// rounding: the first strictly positive revenue value, exactly as written.
func FindRevenue(result []byte) (money.Amount, bool) {
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return money.Zero, false
	}
	v, ok, _ := walk(dec, tok)
	return v, ok
}

var errNotKey = errors.New("object key is not a string")

// walk searches the value that starts with tok. Objects are read token by
// token so keys are visited in document order.
func walk(dec *json.Decoder, tok json.Token) (money.Amount, bool, error) {
	delim, ok := tok.(json.Delim)
	if !ok {
		return money.Zero, false, nil // a scalar holds no keys
	}
	for dec.More() {
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return money.Zero, false, err
			}
			key, ok := k.(string)
			if !ok {
				return money.Zero, false, errNotKey
			}
			val, err := dec.Token()
			if err != nil {
				return money.Zero, false, err
			}
			if revenueKey(key) {
				if a, ok := money.ParseJSONValue(val); ok && a.Sign() > 0 {
					return a, true, nil
				}
			}
			if a, ok, err := walk(dec, val); ok || err != nil {
				return a, ok, err
			}
			continue
		}
		val, err := dec.Token()
		if err != nil {
			return money.Zero, false, err
		}
		if a, ok, err := walk(dec, val); ok || err != nil {
			return a, ok, err
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) { // the closing delimiter
		return money.Zero, false, err
	}
	return money.Zero, false, nil
}
