// Package prices is the per-model price table of BRAMA_PRICES_FILE
// (docs/brama.md#per-model-prices) and the book that lays it over the
// shipped catalogue: which price a completion of a given model pays per
// million prompt, cached prompt, cache-write and completion tokens, and
// from where. It is pure: it parses the file's JSON and answers
// look-ups; reading the file is the caller's.
package prices

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/strictjson"
)

// Pair is the price in USD of a million prompt (Input) and completion
// (Output) tokens, and of a million prompt tokens the provider served
// from its cache (CachedInput) or wrote to it (CacheWriteInput)
// (docs/money.md#debit). None is negative. A nil CachedInput or
// CacheWriteInput means the input price, so a Pair that names only the
// two prices prices every prompt token at Input.
type Pair struct {
	Input           money.Amount
	Output          money.Amount
	CachedInput     *money.Amount
	CacheWriteInput *money.Amount
}

// Cached is the price of a million cached prompt tokens: CachedInput, or
// Input when it is nil.
func (p Pair) Cached() money.Amount {
	if p.CachedInput != nil {
		return *p.CachedInput
	}
	return p.Input
}

// CacheWrite is the price of a million prompt tokens written to the
// cache: CacheWriteInput, or Input when it is nil.
func (p Pair) CacheWrite() money.Amount {
	if p.CacheWriteInput != nil {
		return *p.CacheWriteInput
	}
	return p.Input
}

// PromptWorst is the highest price any prompt token of p may pay: the
// largest of Input, Cached and CacheWrite. The no-overdraft reservation
// prices the prompt at it (docs/money.md#no-overdraft).
func (p Pair) PromptWorst() money.Amount {
	return maxAmount(p.Input, maxAmount(p.Cached(), p.CacheWrite()))
}

// Higher is the higher of each price of p and q, each on its own; a
// cache price is set only when either side sets one.
func (p Pair) Higher(q Pair) Pair {
	out := Pair{Input: maxAmount(p.Input, q.Input), Output: maxAmount(p.Output, q.Output)}
	if p.CachedInput != nil || q.CachedInput != nil {
		v := maxAmount(p.Cached(), q.Cached())
		out.CachedInput = &v
	}
	if p.CacheWriteInput != nil || q.CacheWriteInput != nil {
		v := maxAmount(p.CacheWrite(), q.CacheWrite())
		out.CacheWriteInput = &v
	}
	return out
}

func maxAmount(a, b money.Amount) money.Amount {
	if b.Cmp(a) > 0 {
		return b
	}
	return a
}

// Table maps a model id to its prices. The zero value (nil) lists no
// model, so every look-up falls back to the configured pair.
type Table map[string]Pair

// The fields of a model's entry.
const (
	fieldInput      = "input_usd_per_million"
	fieldOutput     = "output_usd_per_million"
	fieldCached     = "cached_input_usd_per_million"
	fieldCacheWrite = "cache_write_input_usd_per_million"
)

// Parse reads the JSON object of a prices file:
// {"<model id>": {"input_usd_per_million": "<decimal>",
// "output_usd_per_million": "<decimal>",
// "cached_input_usd_per_million": "<decimal>",
// "cache_write_input_usd_per_million": "<decimal>"}, …}. The first two
// prices are required, the two cache prices optional (nil, meaning the
// input price, when absent); each is a decimal string ≥ 0. Other fields
// are refused so a misspelt price is not read as a missing one, and so is
// a field given twice, which JSON would read as its last value. The error
// says what is wrong, naming the model; the caller prefixes the variable.
func Parse(data []byte) (Table, error) {
	var raw map[string]json.RawMessage
	if err := strictjson.Decode(data, &raw); err != nil || raw == nil {
		return nil, errors.New("must be a JSON object of model prices")
	}
	if model, ok := strictjson.RepeatedKey(data); ok {
		return nil, fmt.Errorf("model %q is listed twice", model)
	}
	t := make(Table, len(raw))
	for _, model := range slices.Sorted(maps.Keys(raw)) {
		if model == "" {
			return nil, errors.New("a model id is empty")
		}
		var fields map[string]json.RawMessage
		if err := strictjson.Decode(raw[model], &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("model %q: must be an object with %s and %s", model, fieldInput, fieldOutput)
		}
		if name, ok := strictjson.RepeatedKey(raw[model]); ok {
			return nil, fmt.Errorf("model %q: %s is given twice", model, name)
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if k != fieldInput && k != fieldOutput && k != fieldCached && k != fieldCacheWrite {
				return nil, fmt.Errorf("model %q: unknown field %q", model, k)
			}
		}
		in, err := price(model, fieldInput, fields[fieldInput])
		if err != nil {
			return nil, err
		}
		out, err := price(model, fieldOutput, fields[fieldOutput])
		if err != nil {
			return nil, err
		}
		pair := Pair{Input: in, Output: out}
		if pair.CachedInput, err = optionalPrice(model, fieldCached, fields[fieldCached]); err != nil {
			return nil, err
		}
		if pair.CacheWriteInput, err = optionalPrice(model, fieldCacheWrite, fields[fieldCacheWrite]); err != nil {
			return nil, err
		}
		t[model] = pair
	}
	return t, nil
}

// optionalPrice is price for a field that may be absent (nil).
func optionalPrice(model, field string, raw json.RawMessage) (*money.Amount, error) {
	if raw == nil {
		return nil, nil
	}
	v, err := price(model, field, raw)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func price(model, field string, raw json.RawMessage) (money.Amount, error) {
	if raw == nil {
		return money.Zero, fmt.Errorf("model %q: %s is required", model, field)
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		return money.Zero, fmt.Errorf("model %q: %s must be a decimal string", model, field)
	}
	v, err := money.Parse(text)
	if errors.Is(err, money.ErrRange) {
		return money.Zero, fmt.Errorf("model %q: %s is out of range", model, field)
	}
	if err != nil {
		return money.Zero, fmt.Errorf("model %q: %s must be a decimal string", model, field)
	}
	if v.Sign() < 0 {
		return money.Zero, fmt.Errorf("model %q: %s cannot be negative", model, field)
	}
	return v, nil
}

// Reservation is the price a reservation of a completion of requested
// assumes before the answer names a model (docs/brama.md#charging-without-usage):
// the requested model's prices when listed; for a model the table does not
// list (a selector, or an id absent from the file) the highest of each
// price of the table and of fallback, each on its own (Higher), so the
// bound holds whichever model answers.
func (t Table) Reservation(requested string, fallback Pair) Pair {
	if p, ok := t[requested]; ok {
		return p
	}
	best := fallback
	for _, model := range slices.Sorted(maps.Keys(t)) {
		best = best.Higher(t[model])
	}
	return best
}
