package brama

import (
	"fmt"
	"strings"

	"github.com/wisent/singularity/internal/wire/chat"
)

// readUsage is a usage block in the runtime's form, and why its cache
// counts could not be kept ("" when they could).
type readUsage struct {
	usage chat.Usage
	why   string
}

// fromReport reads a usage block in any of the forms of
// docs/brama.md#cached-prompt-tokens. The cached count is
// prompt_tokens_details.cached_tokens, prompt_cache_hit_tokens or
// cache_read_input_tokens, whichever are present, and they must agree;
// the cache-write count is cache_creation_input_tokens. Both are parts of
// prompt_tokens, so together they may not exceed it. When they disagree
// or do not fit, the usage keeps no cache counts (every prompt token is
// priced at the input price) and why says what is wrong, for a strict
// refusal or a lenient warning. Reasoning tokens are kept as reported:
// they do not change the price.
func fromReport(r chat.UsageReport) readUsage {
	u := chat.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens}
	if d := r.CompletionTokensDetails; d != nil && d.ReasoningTokens != nil {
		u.ReasoningTokens = *d.ReasoningTokens
	}
	cached, why := cachedCount(r)
	if why != "" {
		return readUsage{usage: u, why: why}
	}
	var written uint64
	if r.CacheCreationInputTokens != nil {
		written = *r.CacheCreationInputTokens
	}
	if cached > u.PromptTokens || written > u.PromptTokens-cached {
		if written == 0 {
			why = fmt.Sprintf("%d cached tokens for %d prompt tokens", cached, u.PromptTokens)
		} else {
			why = fmt.Sprintf("%d cached and %d cache-write tokens for %d prompt tokens", cached, written, u.PromptTokens)
		}
		return readUsage{usage: u, why: why}
	}
	u.CachedTokens, u.CacheWriteTokens = cached, written
	return readUsage{usage: u}
}

// cachedCount is the cached count the forms present agree on (0 when
// none is), or why they do not agree.
func cachedCount(r chat.UsageReport) (uint64, string) {
	type form struct {
		name  string
		count *uint64
	}
	forms := []form{
		{"prompt_cache_hit_tokens", r.PromptCacheHitTokens},
		{"cache_read_input_tokens", r.CacheReadInputTokens},
	}
	if d := r.PromptTokensDetails; d != nil {
		forms = append([]form{{"prompt_tokens_details.cached_tokens", d.CachedTokens}}, forms...)
	}
	var (
		cached uint64
		seen   []string
		differ bool
	)
	for _, f := range forms {
		if f.count == nil {
			continue
		}
		if len(seen) > 0 && *f.count != cached {
			differ = true
		}
		cached = *f.count
		seen = append(seen, fmt.Sprintf("%s %d", f.name, *f.count))
	}
	if differ {
		return 0, "cached counts disagree: " + strings.Join(seen, ", ")
	}
	return cached, ""
}
