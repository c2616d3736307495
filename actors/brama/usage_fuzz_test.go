package brama

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
)

// FuzzUsageDebit holds the debit of any usage block to the provider's own
// reading of it (docs/brama.md#cached-prompt-tokens): when the block's
// prompt, completion and total counts are token counts, the completion is
// debited, accepted or refused, strict or lenient; and whenever every
// reading the provider may have meant is plausible
// (docs/brama.md#implausible-usage), the debit the ledger prices is never
// below what any of them bills, whether the cache is cheaper than input,
// dearer, or free. A consistent block has one reading, its parts; an
// inconsistent one may mean its cache counts as parts of the prompt
// tokens, beside them, or (DeepSeek) its cache misses as the uncached
// prompt, with any cached form that decodes. A count that is not a token
// count means nothing, and total_tokens prices nothing: providers bill
// the typed counts.
func FuzzUsageDebit(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}`,
		`{"prompt_tokens":2048,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":40}}`,
		`{"prompt_tokens":1500,"completion_tokens":50,"prompt_cache_hit_tokens":1200,"prompt_cache_miss_tokens":300}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"prompt_cache_hit_tokens":2000,"prompt_cache_miss_tokens":4000}`,
		`{"prompt_tokens":3000,"completion_tokens":200,"prompt_tokens_details":{"cached_tokens":500},"cache_read_input_tokens":500,"cache_creation_input_tokens":2000}`,
		`{"prompt_tokens":500,"completion_tokens":200,"total_tokens":3200,"cache_read_input_tokens":1500,"cache_creation_input_tokens":1000}`,
		`{"prompt_tokens":1000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":500},"cache_read_input_tokens":400}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"prompt_tokens_details":{"cached_tokens":2000.0}}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"prompt_tokens_details":{"cached_tokens":"2000"}}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"prompt_tokens_details":{"cached_tokens":-5},"cache_creation_input_tokens":100}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"prompt_tokens_details":[]}`,
		`{"prompt_tokens":2000,"completion_tokens":400,"cache_read_input_tokens":1e30,"prompt_cache_miss_tokens":18446744073709551616}`,
		`{"prompt_tokens":10,"completion_tokens":5,"cache_read_input_tokens":1,"cache_creation_input_tokens":18446744073709551615}`,
		`{"prompt_tokens":18446744073709551615,"completion_tokens":18446744073709551615,"total_tokens":18446744073709551615}`,
		`{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":99999}`,
		`{"prompt_tokens":1000,"Prompt_Tokens":1,"completion_tokens":100,"prompt_tokens":2}`,
		`{"completion_tokens":100}`, `{"prompt_tokens":0,"completion_tokens":0}`, `{}`, `null`, `[]`,
		`{"prompt_tokens":0,"completion_tokens":9000,"prompt_tokens_details":{"cached_tokens":4}}`,
		`{"prompt_tokens":100,"completion_tokens":1},"usage":{"prompt_tokens":1,"completion_tokens":1}`,
	} {
		f.Add([]byte(s), uint16(3000), uint16(2048))
		f.Add([]byte(s), uint16(300), uint16(64))
	}
	f.Fuzz(func(t *testing.T, block []byte, bytes, maxTokens uint16) {
		body := []byte(`{"model":"m","choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":` + string(block) + `}`)
		reservation := ReservationUsage(int(bytes), int(maxTokens))
		readings, readable := providerReadings(body)
		for _, lenient := range []bool{false, true} {
			c, err := parseCompletion(body, lenient, reservation)
			if !readable {
				continue
			}
			if err != nil && !c.Billed {
				t.Fatalf("usage %s (lenient %v) is readable but not debited: %v", block, lenient, err)
			}
			if !allPlausible(readings, uint64(bytes), uint64(maxTokens)) {
				continue
			}
			for _, p := range fuzzPricings {
				debit := budget.ComputeDebit(p, c.Usage, 0).API.Mul(money.FromInt(1_000_000))
				for _, r := range readings {
					if bill := r.bill(p.Tokens()); debit.Cmp(bill) < 0 {
						t.Fatalf("usage %s (lenient %v, %d bytes, max_tokens %d) debited as %+v: %s millionths at %+v, below the reading %+v: %s",
							block, lenient, bytes, maxTokens, c.Usage, debit, p.Tokens(), r, bill)
					}
				}
			}
		}
	})
}

// fuzzPricings are token prices per million where the cache is cheaper
// than input and writing to it dearer (Anthropic's), where the cache is
// dearer than input, and where only some parts are priced at all.
var fuzzPricings = func() []budget.Pricing {
	d := func(s string) *money.Amount {
		v, err := money.Parse(s)
		if err != nil {
			panic(err)
		}
		return &v
	}
	pair := func(in, out, cached, write string) budget.Pricing {
		return budget.Pricing{}.WithTokens(prices.Pair{Input: *d(in), Output: *d(out), CachedInput: d(cached), CacheWriteInput: d(write)})
	}
	return []budget.Pricing{
		pair("3", "15", "0.3", "3.75"),
		pair("2", "8", "5", "0.5"),
		pair("1", "0", "0", "0"),
		pair("0", "0", "1", "0"),
		pair("0", "0", "0", "1"),
		pair("0", "1", "0", "0"),
	}
}()

// providerReading is what a provider may bill for a usage block: prompt
// tokens at the input, cached and cache-write prices, and completion
// tokens at the output price.
type providerReading struct {
	input, cached, writes, output uint64
}

// bill is the reading's exact cost at p, in millionths of a dollar.
func (r providerReading) bill(p prices.Pair) money.Amount {
	return money.FromUint(r.input).Mul(p.Input).
		Add(money.FromUint(r.cached).Mul(p.Cached())).
		Add(money.FromUint(r.writes).Mul(p.CacheWrite())).
		Add(money.FromUint(r.output).Mul(p.Output))
}

// allPlausible reports that no reading is one no request of bytes and
// maxTokens could have cost; a zero bound bounds nothing.
func allPlausible(readings []providerReading, bytes, maxTokens uint64) bool {
	for _, r := range readings {
		prompt := r.input + r.cached
		if prompt < r.input || prompt+r.writes < prompt {
			return false
		}
		prompt += r.writes
		if bytes > 0 && prompt > 4*bytes || maxTokens > 0 && r.output > 4*maxTokens {
			return false
		}
	}
	return true
}

// countText is a token count as a provider writes it.
var countText = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// oracleCount reads one count of a usage block on its own terms: set is
// false when it is absent or null, ok false when it is set and not a
// whole number from 0 to 2^64−1 in plain digits.
func oracleCount(raw json.RawMessage) (n uint64, set, ok bool) {
	text := strings.TrimSpace(string(raw))
	if raw == nil || text == "null" {
		return 0, false, true
	}
	if !countText.MatchString(text) {
		return 0, true, false
	}
	n, err := strconv.ParseUint(text, 10, 64)
	return n, true, err == nil
}

// providerReadings lists the readings of body's usage block (by its exact
// field names, a repeated one by its last value), or false when the block
// cannot be read: it is not an object, or a prompt, completion or total
// count is not a token count.
func providerReadings(body []byte) ([]providerReading, bool) {
	var top, fields map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(top["usage"], &fields) != nil || fields == nil {
		return nil, false
	}
	var main [3]uint64
	for i, name := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
		n, _, ok := oracleCount(fields[name])
		if !ok {
			return nil, false
		}
		main[i] = n
	}
	prompt, completion := main[0], main[1]

	consistent := true
	var cachedValues []uint64
	form := func(raw json.RawMessage) {
		n, set, ok := oracleCount(raw)
		switch {
		case !ok:
			consistent = false
		case set:
			if len(cachedValues) > 0 && cachedValues[0] != n {
				consistent = false
			}
			cachedValues = append(cachedValues, n)
		}
	}
	if raw := fields["prompt_tokens_details"]; raw != nil && string(raw) != "null" {
		var details map[string]json.RawMessage
		if json.Unmarshal(raw, &details) != nil {
			consistent = false
		} else {
			form(details["cached_tokens"])
		}
	}
	form(fields["prompt_cache_hit_tokens"])
	form(fields["cache_read_input_tokens"])
	writes, _, ok := oracleCount(fields["cache_creation_input_tokens"])
	consistent = consistent && ok
	miss, missSet, ok := oracleCount(fields["prompt_cache_miss_tokens"])
	consistent = consistent && ok
	missKnown := missSet && ok

	fits := func(cached uint64) bool { return cached <= prompt && writes <= prompt-cached }
	if consistent && len(cachedValues) > 0 && !fits(cachedValues[0]) || consistent && len(cachedValues) == 0 && !fits(0) {
		consistent = false
	}
	if consistent {
		var cached uint64
		if len(cachedValues) > 0 {
			cached = cachedValues[0]
		}
		if !missKnown || miss == prompt-cached-writes {
			return []providerReading{{input: prompt - cached - writes, cached: cached, writes: writes, output: completion}}, true
		}
	}
	var readings []providerReading
	for _, cached := range append(cachedValues, 0) {
		if fits(cached) {
			readings = append(readings, providerReading{input: prompt - cached - writes, cached: cached, writes: writes, output: completion})
		}
		readings = append(readings, providerReading{input: prompt, cached: cached, writes: writes, output: completion})
		if missKnown {
			readings = append(readings, providerReading{input: miss, cached: cached, writes: writes, output: completion})
		}
	}
	return readings, true
}
