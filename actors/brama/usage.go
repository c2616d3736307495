package brama

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/wisent/singularity/internal/wire/chat"
)

// The fields of a usage block the runtime reads
// (docs/brama.md#cached-prompt-tokens).
const (
	fieldPrompt           = "prompt_tokens"
	fieldCompletion       = "completion_tokens"
	fieldTotal            = "total_tokens"
	fieldPromptDetails    = "prompt_tokens_details"
	fieldCachedTokens     = "cached_tokens"
	fieldCompletionDetail = "completion_tokens_details"
	fieldReasoningTokens  = "reasoning_tokens"
	fieldCacheHit         = "prompt_cache_hit_tokens"
	fieldCacheMiss        = "prompt_cache_miss_tokens"
	fieldCacheRead        = "cache_read_input_tokens"
	fieldCacheCreation    = "cache_creation_input_tokens"
)

// reading is a usage block read for its debit.
type reading struct {
	// usage holds the prompt, completion, total and reasoning counts as
	// reported, and the cache counts when the block is consistent.
	usage chat.Usage
	// why says how the block's cache counts are inconsistent ("" when
	// they are not), for a strict refusal or a lenient warning. Then the
	// block is priced at its larger reading: uncached prompt tokens
	// (the larger of prompt_tokens and the cache misses) at the input
	// price, and beside them the cached and cache-write tokens (the
	// largest of the forms that decode) at theirs.
	why                      string
	uncached, cached, writes uint64
}

// readUsage reads a usage block, a JSON object, by its exact field names
// (docs/brama.md#cached-prompt-tokens); a repeated field counts as its
// last value. The prompt, completion and total counts must be token
// counts (integers from 0 to 2^64−1, absent or null meaning 0), else the
// block cannot be read at all. The cached count is
// prompt_tokens_details.cached_tokens, prompt_cache_hit_tokens or
// cache_read_input_tokens, whichever are present, and they must agree;
// the cache-write count is cache_creation_input_tokens. Both are parts of
// prompt_tokens, so together they may not exceed it, and with DeepSeek's
// prompt_cache_miss_tokens the three add up to it. A cache count that is
// not a token count, forms that disagree and counts that do not fit make
// the block inconsistent (reading.why). A reasoning count that is not a
// token count is left out: it changes no price.
func readUsage(raw json.RawMessage) (reading, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return reading{}, fmt.Errorf("usage: %w", err)
	}
	var u chat.Usage
	for _, c := range []struct {
		name string
		to   *uint64
	}{{fieldPrompt, &u.PromptTokens}, {fieldCompletion, &u.CompletionTokens}, {fieldTotal, &u.TotalTokens}} {
		n, _, ok := tokenCount(fields[c.name])
		if !ok {
			return reading{}, fmt.Errorf("usage: %s is not a token count", c.name)
		}
		*c.to = n
	}
	if details, ok := object(fields[fieldCompletionDetail]); ok {
		if n, _, ok := tokenCount(details[fieldReasoningTokens]); ok {
			u.ReasoningTokens = n
		}
	}

	cachedForms := []count{readCount(fieldCacheHit, fields[fieldCacheHit]), readCount(fieldCacheRead, fields[fieldCacheRead])}
	if raw := fields[fieldPromptDetails]; !absent(raw) {
		details, ok := object(raw)
		name := fieldPromptDetails + "." + fieldCachedTokens
		form := count{name: name, set: true}
		if ok {
			form = readCount(name, details[fieldCachedTokens])
		}
		cachedForms = append([]count{form}, cachedForms...)
	}
	writes := readCount(fieldCacheCreation, fields[fieldCacheCreation])
	miss := readCount(fieldCacheMiss, fields[fieldCacheMiss])

	r := reading{usage: u, why: malformed(append(cachedForms, writes, miss))}
	var (
		seen   []string
		differ bool
	)
	for _, f := range cachedForms {
		if !f.set || !f.ok {
			continue
		}
		if len(seen) > 0 && f.n != r.cached {
			differ = true
		}
		r.cached = max(r.cached, f.n)
		seen = append(seen, fmt.Sprintf("%s %d", f.name, f.n))
	}
	if writes.ok {
		r.writes = writes.n
	}
	p := u.PromptTokens
	switch {
	case r.why != "":
	case differ:
		r.why = "cached counts disagree: " + strings.Join(seen, ", ")
	case r.cached > p || r.writes > p-r.cached:
		r.why = fitMessage(r.cached, r.writes, p)
	case miss.set && miss.n != p-r.cached-r.writes:
		if r.writes == 0 {
			r.why = fmt.Sprintf("%d cached and %d cache-miss tokens for %d prompt tokens", r.cached, miss.n, p)
		} else {
			r.why = fmt.Sprintf("%d cached, %d cache-write and %d cache-miss tokens for %d prompt tokens", r.cached, r.writes, miss.n, p)
		}
	}
	if r.why == "" {
		r.usage.CachedTokens, r.usage.CacheWriteTokens = r.cached, r.writes
		r.cached, r.writes = 0, 0
		return r, nil
	}
	r.uncached = p
	if miss.ok {
		r.uncached = max(p, miss.n)
	}
	return r, nil
}

// priced is the usage the reading is debited, before its total is
// checked: the block's own counts when it is consistent, else its larger
// reading, whose total is to be recomputed when the block's total was
// that of its own counts (the total of an inconsistent block is checked
// against either).
func (r reading) priced() chat.Usage {
	u := r.usage
	if r.why == "" {
		return u
	}
	if u.TotalTokens == addSat(u.PromptTokens, u.CompletionTokens) {
		u.TotalTokens = 0
	}
	u.PromptTokens = addSat(addSat(r.uncached, r.cached), r.writes)
	u.CachedTokens = min(r.cached, u.PromptTokens)
	u.CacheWriteTokens = min(r.writes, u.PromptTokens-u.CachedTokens)
	return u
}

// fitMessage says that cached and cache-write counts do not fit in the
// prompt tokens.
func fitMessage(cached, writes, prompt uint64) string {
	if writes == 0 {
		return fmt.Sprintf("%d cached tokens for %d prompt tokens", cached, prompt)
	}
	return fmt.Sprintf("%d cached and %d cache-write tokens for %d prompt tokens", cached, writes, prompt)
}

// count is one optional count of a usage block: set when present and not
// null, ok when it is not set or is a token count (then n holds it).
type count struct {
	name    string
	n       uint64
	set, ok bool
}

func readCount(name string, raw json.RawMessage) count {
	n, set, ok := tokenCount(raw)
	return count{name: name, n: n, set: set, ok: ok}
}

// malformed names the first count that is set but no token count, as the
// reason of an inconsistent block; "" when there is none.
func malformed(counts []count) string {
	for _, c := range counts {
		if !c.ok {
			return c.name + " is not a token count"
		}
	}
	return ""
}

// tokenCount reads one count: set is false when raw is absent or null;
// ok is false when it is set and not an integer from 0 to 2^64−1 written
// without a fraction or an exponent.
func tokenCount(raw json.RawMessage) (n uint64, set, ok bool) {
	if absent(raw) {
		return 0, false, true
	}
	if json.Unmarshal(raw, &n) != nil {
		return 0, true, false
	}
	return n, true, true
}

// object reads a nested object of a usage block by its exact field names;
// ok is false when raw is not an object (absent or null is an empty one).
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if absent(raw) {
		return nil, true
	}
	var fields map[string]json.RawMessage
	err := json.Unmarshal(raw, &fields)
	return fields, err == nil
}

// absent reports a field that is not there or is null.
func absent(raw json.RawMessage) bool { return raw == nil || string(raw) == "null" }

// addSat is a + b, saturating at the maximum, so token accounting never
// wraps.
func addSat(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}
