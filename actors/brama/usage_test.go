package brama

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
)

// TestUsageForms is docs/brama.md#cached-prompt-tokens: every form of a
// usage block's cached, cache-write and reasoning counts is read through
// the real client from a real server, strictly (Brama) and leniently
// (another gateway), and priced exactly by the ledger at
// docs/money.md#debit's rule. Inconsistent cache counts (that the prompt
// tokens cannot hold, that disagree, that are no token counts) are refused
// by Brama (a billed rejection) and, elsewhere, warned about; both are
// debited at the block's larger reading.
func TestUsageForms(t *testing.T) {
	// Per million tokens: input 2, cached 0.5, cache write 2.5, output 8.
	half, write := money.FromInt(5).QuoDown(money.FromInt(10)), money.FromInt(25).QuoDown(money.FromInt(10))
	pricing := budget.Pricing{}.WithTokens(prices.Pair{Input: money.FromInt(2), Output: money.FromInt(8), CachedInput: &half, CacheWriteInput: &write})
	const choice = `"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]`
	tests := []struct {
		name  string
		usage string
		want  chat.Usage
		api   string // the debit's API part, strict and lenient alike
		// strict is Brama's refusal ("" when accepted); a refused usage
		// is the lenient warning's case too.
		strict string
	}{
		{
			name:  "no cache reported",
			usage: `{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}`,
			want:  chat.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100},
			api:   "0.0028", // 1000×2 + 100×8
		},
		{
			name:  "OpenAI: cached_tokens in prompt_tokens_details, reasoning_tokens in completion_tokens_details",
			usage: `{"prompt_tokens":2048,"completion_tokens":100,"total_tokens":2148,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":40}}`,
			want:  chat.Usage{PromptTokens: 2048, CompletionTokens: 100, TotalTokens: 2148, CachedTokens: 1024, ReasoningTokens: 40},
			api:   "0.00336", // 1024×2 + 1024×0.5 + 100×8
		},
		{
			name:  "OpenAI: zero and null details",
			usage: `{"prompt_tokens":1000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":null}`,
			want:  chat.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100},
			api:   "0.0028",
		},
		{
			name:  "DeepSeek: prompt_cache_hit_tokens",
			usage: `{"prompt_tokens":1500,"completion_tokens":50,"total_tokens":1550,"prompt_cache_hit_tokens":1200,"prompt_cache_miss_tokens":300}`,
			want:  chat.Usage{PromptTokens: 1500, CompletionTokens: 50, TotalTokens: 1550, CachedTokens: 1200},
			api:   "0.0016", // 300×2 + 1200×0.5 + 50×8
		},
		{
			name:  "LiteLLM: cache reads and writes inside prompt_tokens, reads also in prompt_tokens_details",
			usage: `{"prompt_tokens":3000,"completion_tokens":200,"total_tokens":3200,"prompt_tokens_details":{"cached_tokens":500},"cache_read_input_tokens":500,"cache_creation_input_tokens":2000}`,
			want:  chat.Usage{PromptTokens: 3000, CompletionTokens: 200, TotalTokens: 3200, CachedTokens: 500, CacheWriteTokens: 2000},
			api:   "0.00785", // 500×2 + 500×0.5 + 2000×2.5 + 200×8
		},
		{
			name:  "Anthropic-style counts alone",
			usage: `{"prompt_tokens":1000,"completion_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}`,
			want:  chat.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010, CachedTokens: 100},
			api:   "0.00193", // 900×2 + 100×0.5 + 10×8
		},
		{
			name:  "the whole prompt cached",
			usage: `{"prompt_tokens":1024,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":1024}}`,
			want:  chat.Usage{PromptTokens: 1024, TotalTokens: 1024, CachedTokens: 1024},
			api:   "0.000512",
		},
		{
			name:  "DeepSeek: hits and misses that add up",
			usage: `{"prompt_tokens":2000,"completion_tokens":400,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":2000}`,
			want:  chat.Usage{PromptTokens: 2000, CompletionTokens: 400, TotalTokens: 2400},
			api:   "0.0072", // 2000×2 + 400×8
		},
		{
			name:  "a reasoning count that is not a token count is left out",
			usage: `{"prompt_tokens":1000,"completion_tokens":100,"completion_tokens_details":{"reasoning_tokens":1.5}}`,
			want:  chat.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100},
			api:   "0.0028",
		},
		{
			name:   "more cached than prompt tokens",
			usage:  `{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":11}}`,
			want:   chat.Usage{PromptTokens: 21, CompletionTokens: 5, TotalTokens: 26, CachedTokens: 11},
			api:    "0.0000655", // 10×2 + 11×0.5 + 5×8: the cached tokens beside the prompt
			strict: "brama: inconsistent usage: 11 cached tokens for 10 prompt tokens",
		},
		{
			name:   "more cached and written than prompt tokens",
			usage:  `{"prompt_tokens":1000,"completion_tokens":5,"cache_read_input_tokens":600,"cache_creation_input_tokens":500}`,
			want:   chat.Usage{PromptTokens: 2100, CompletionTokens: 5, TotalTokens: 2105, CachedTokens: 600, CacheWriteTokens: 500},
			api:    "0.00359", // 1000×2 + 600×0.5 + 500×2.5 + 5×8
			strict: "brama: inconsistent usage: 600 cached and 500 cache-write tokens for 1000 prompt tokens",
		},
		{
			name: "Anthropic's reading: reads and writes beside the prompt, in the total",
			usage: `{"prompt_tokens":500,"completion_tokens":200,"total_tokens":3200,` +
				`"cache_read_input_tokens":1500,"cache_creation_input_tokens":1000}`,
			want:   chat.Usage{PromptTokens: 3000, CompletionTokens: 200, TotalTokens: 3200, CachedTokens: 1500, CacheWriteTokens: 1000},
			api:    "0.00585", // 500×2 + 1500×0.5 + 1000×2.5 + 200×8
			strict: "brama: inconsistent usage: 1500 cached and 1000 cache-write tokens for 500 prompt tokens",
		},
		{
			name:   "forms that disagree",
			usage:  `{"prompt_tokens":1000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":500},"cache_read_input_tokens":400}`,
			want:   chat.Usage{PromptTokens: 1500, CompletionTokens: 5, TotalTokens: 1505, CachedTokens: 500},
			api:    "0.00229", // 1000×2 + 500×0.5 + 5×8: the larger form beside the prompt
			strict: "brama: inconsistent usage: cached counts disagree: prompt_tokens_details.cached_tokens 500, cache_read_input_tokens 400",
		},
		{
			name:   "DeepSeek: misses that do not add up",
			usage:  `{"prompt_tokens":2000,"completion_tokens":400,"total_tokens":2400,"prompt_cache_hit_tokens":2000,"prompt_cache_miss_tokens":4000}`,
			want:   chat.Usage{PromptTokens: 6000, CompletionTokens: 400, TotalTokens: 6400, CachedTokens: 2000},
			api:    "0.0122", // 4000×2 + 2000×0.5 + 400×8
			strict: "brama: inconsistent usage: 2000 cached and 4000 cache-miss tokens for 2000 prompt tokens",
		},
	}
	for _, form := range []string{
		`"prompt_tokens_details":{"cached_tokens":2000.0}`, `"prompt_tokens_details":{"cached_tokens":"2000"}`,
		`"prompt_tokens_details":{"cached_tokens":-5}`, `"prompt_tokens_details":{"cached_tokens":100.5}`,
		`"prompt_tokens_details":{"cached_tokens":1e30}`, `"prompt_tokens_details":{"cached_tokens":18446744073709551616}`,
		`"prompt_tokens_details":[]`, `"prompt_cache_hit_tokens":true`, `"cache_read_input_tokens":{}`,
	} {
		name := "prompt_tokens_details.cached_tokens"
		if !strings.HasPrefix(form, `"prompt_tokens_details"`) {
			name, _, _ = strings.Cut(form[1:], `"`)
		}
		tests = append(tests, struct {
			name   string
			usage  string
			want   chat.Usage
			api    string
			strict string
		}{
			name:   "a cache count that is not a token count: " + form,
			usage:  `{"prompt_tokens":2000,"completion_tokens":400,` + form + `}`,
			want:   chat.Usage{PromptTokens: 2000, CompletionTokens: 400, TotalTokens: 2400},
			api:    "0.0072", // every prompt token at the input price
			strict: "brama: inconsistent usage: " + name + " is not a token count",
		})
	}
	strictSrv := newServer(t)
	strict := newClient(t, strictSrv.URL)
	lenientSrv := newServer(t, func(c *bramatest.Config) { c.Auth = "none" })
	lenient := newClient(t, lenientSrv.URL, func(c *ClientConfig) { c.Auth = "none" })
	// A request of some 16 KB, so that no count here is implausible.
	p := sampleParams()
	p.Messages[0].Content = strings.Repeat("You are Ada. ", 1300)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"test-model",` + choice + `,"usage":` + tt.usage + `}`
			strictSrv.Enqueue(bramatest.RawReply(body))
			got, err := strict.Complete(testContext(t), p)
			if tt.strict != "" {
				requireBramaError(t, err, fault.Permanent, tt.strict)
				require.True(t, got.Billed, "a billed rejection")
			} else {
				require.NoError(t, err)
				require.Empty(t, got.Warnings)
			}
			require.Equal(t, tt.want, got.Usage)
			require.Equal(t, tt.api, budget.ComputeDebit(pricing, got.Usage, 0).API.String())

			lenientSrv.Enqueue(bramatest.RawReply(body))
			got, err = lenient.Complete(testContext(t), p)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Usage)
			require.Equal(t, tt.api, budget.ComputeDebit(pricing, got.Usage, 0).API.String())
			if tt.strict != "" {
				require.Equal(t, []string{WarnCacheCounts}, got.Warnings)
			} else {
				require.Empty(t, got.Warnings)
			}
		})
	}
}

// TestCappedUsageKeepsItsParts: a lenient usage capped as implausible
// (docs/brama.md#implausible-usage) keeps its cache and reasoning counts
// within the capped counts.
func TestCappedUsageKeepsItsParts(t *testing.T) {
	reservation := ReservationUsage(300, 64)
	body := `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5000,"completion_tokens":900,` +
		`"prompt_tokens_details":{"cached_tokens":3000},"cache_creation_input_tokens":1500,"completion_tokens_details":{"reasoning_tokens":800}}}`
	got, err := parseCompletion([]byte(body), true, reservation)
	require.NoError(t, err)
	require.Equal(t, chat.Usage{PromptTokens: 1200, CompletionTokens: 256, TotalTokens: 1456, CachedTokens: 1200, ReasoningTokens: 256}, got.Usage)
	require.Equal(t, []string{WarnUsageCapped}, got.Warnings)
}

// TestPromptCacheKey is BRAMA_PROMPT_CACHE_KEY (docs/brama.md#prompt-cache-key):
// off, no body names a prompt_cache_key; on, each carries the being's
// own id, last, and the signature covers it.
func TestPromptCacheKey(t *testing.T) {
	srv := newServer(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply { return bramatest.TextReply("ok", bramatest.Usage(10, 2)) })
	p := sampleParams()
	p.BeingID = "child-7f3a"
	_, err := newClient(t, srv.URL).Complete(testContext(t), p)
	require.NoError(t, err)
	_, err = newClient(t, srv.URL, func(c *ClientConfig) { c.PromptCacheKey = true }).Complete(testContext(t), p)
	require.NoError(t, err)
	p.BeingID = ""
	_, err = newClient(t, srv.URL, func(c *ClientConfig) { c.PromptCacheKey = true }).Complete(testContext(t), p)
	require.NoError(t, err)

	reqs := srv.Completions()
	require.Len(t, reqs, 3)
	require.NotContains(t, string(reqs[0].Body), "prompt_cache_key")
	require.True(t, strings.HasSuffix(string(reqs[1].Body), `,"prompt_cache_key":"child-7f3a"}`), string(reqs[1].Body))
	require.NotContains(t, string(reqs[2].Body), "prompt_cache_key", "a request without a being id sends none")
	for _, r := range reqs {
		require.True(t, r.Verified, "the signature covers the body as sent")
	}
}

// TestNoPromptTokensChargedTheReservation is docs/brama.md#implausible-usage
// for a block that reports no prompt tokens for a request of some bytes
// (an empty block, zeros, prompt_tokens left out): Brama's strict
// validation refuses it, and both modes charge the reservation, or the
// block's own completion tokens when they are more (capped at 4 times
// max_tokens). A block whose cache counts make its larger reading hold
// prompt tokens is priced at that reading.
func TestNoPromptTokensChargedTheReservation(t *testing.T) {
	reservation := ReservationUsage(300, 64) // a 300-byte request, max_tokens 64
	const refusal = "brama: inconsistent usage: 0 prompt tokens for a request of 300 bytes"
	tests := []struct {
		name     string
		usage    string
		want     chat.Usage
		strict   string
		warnings []string
	}{
		{"an empty block", `{}`, reservation, refusal, []string{WarnNoPromptCharge}},
		{"all zeros", `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, reservation, refusal, []string{WarnNoPromptCharge}},
		{"prompt_tokens left out", `{"completion_tokens":40}`, reservation, refusal, []string{WarnNoPromptCharge}},
		{"more completion tokens than max_tokens", `{"completion_tokens":100,"total_tokens":100}`, bramatest.Usage(300, 100), refusal, []string{WarnNoPromptCharge}},
		{"implausible completion tokens", `{"completion_tokens":5000}`, bramatest.Usage(300, 256), refusal, []string{WarnNoPromptCharge}},
		{"cached tokens beside no prompt tokens", `{"prompt_tokens":0,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}`,
			chat.Usage{PromptTokens: 4, CompletionTokens: 5, TotalTokens: 9, CachedTokens: 4},
			"brama: inconsistent usage: 4 cached tokens for 0 prompt tokens", []string{WarnCacheCounts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"model":"m","choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":` + tt.usage + `}`)
			strict, err := parseCompletion(body, false, reservation)
			requireBramaError(t, err, fault.Permanent, tt.strict)
			reserved := slices.Contains(tt.warnings, WarnNoPromptCharge)
			require.Equal(t, Completion{Usage: tt.want, Billed: true, Model: "m", PromptReserved: reserved}, strict)
			lenient, err := parseCompletion(body, true, reservation)
			require.NoError(t, err)
			require.Equal(t, tt.want, lenient.Usage)
			require.Equal(t, reserved, lenient.PromptReserved, "the prompt is the reservation's")
			require.Equal(t, tt.warnings, lenient.Warnings)
		})
	}
	// A request of no bytes (a test's) bounds nothing.
	got, err := parseCompletion([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{}}`), false, chat.Usage{})
	require.NoError(t, err)
	require.Equal(t, chat.Usage{}, got.Usage)
}

// TestLargerReadingIsCapped: the larger reading of inconsistent cache
// counts is bounded like any count (docs/brama.md#implausible-usage): a
// cache write of 2^64−1 tokens is capped with its parts, and Brama's
// refusal is debited the same.
func TestLargerReadingIsCapped(t *testing.T) {
	reservation := ReservationUsage(300, 64)
	body := []byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,` +
		`"cache_read_input_tokens":1,"cache_creation_input_tokens":18446744073709551615}}`)
	strict, err := parseCompletion(body, false, reservation)
	requireBramaError(t, err, fault.Permanent, "brama: inconsistent usage: 1 cached and 18446744073709551615 cache-write tokens for 10 prompt tokens")
	capped := chat.Usage{PromptTokens: 1200, CompletionTokens: 5, TotalTokens: 1205, CachedTokens: 1, CacheWriteTokens: 1199}
	require.Equal(t, Completion{Usage: capped, Billed: true}, strict)
	lenient, err := parseCompletion(body, true, reservation)
	require.NoError(t, err)
	require.Equal(t, capped, lenient.Usage)
	require.Equal(t, []string{WarnCacheCounts, WarnUsageCapped}, lenient.Warnings)
}
