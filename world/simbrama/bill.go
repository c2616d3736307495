package simbrama

import (
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Account is what the simulated gateway did for one caller: the being
// that sent prompt_cache_key, or else the agent id of x-agent-id
// (docs/demo.md#the-prompt-cache).
type Account struct {
	// Completions is the number of completions answered with 200.
	Completions uint64
	// PromptTokens, CachedTokens and CompletionTokens sum the usage the
	// gateway reported; CachedTokens is a part of PromptTokens.
	PromptTokens, CachedTokens, CompletionTokens uint64
	// Billed is what those completions cost at Options.Prices, exactly:
	// each completion's uncached prompt tokens at the input price, its
	// cached ones at the cached price and its completion tokens at the
	// output price, per million, never rounded.
	Billed money.Amount
}

// perToken is the factor of a price per million tokens: exact, where a
// division would round.
var perToken = func() money.Amount {
	v, err := money.Parse("0.000001")
	if err != nil {
		panic(err)
	}
	return v
}()

// cost is one completion's exact cost at p.
func cost(p prices.Pair, u chat.Usage) money.Amount {
	uncached := u.PromptTokens - u.CachedTokens
	return money.FromUint(uncached).Mul(p.Input).
		Add(money.FromUint(u.CachedTokens).Mul(p.Cached())).
		Add(money.FromUint(u.CompletionTokens).Mul(p.Output)).
		Mul(perToken)
}

// price is the price of a completion of model: the table's when it lists
// the model, else the fallback.
func price(opts Options, model string) prices.Pair {
	if p, ok := opts.Prices[model]; ok {
		return p
	}
	return opts.Price
}

// add counts one completion's usage and cost.
func (a Account) add(u chat.Usage, c money.Amount) Account {
	a.Completions++
	a.PromptTokens += u.PromptTokens
	a.CachedTokens += u.CachedTokens
	a.CompletionTokens += u.CompletionTokens
	a.Billed = a.Billed.Add(c)
	return a
}
