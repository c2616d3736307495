package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// warnCacheCounts is the warning of docs/brama.md#lenient-validation for
// inconsistent cache counts.
const warnCacheCounts = "completion reported inconsistent cache counts; debited at their larger reading"

// recallReply is a tool-call reply (one memory recall) carrying the usage
// block usage as it is written.
func recallReply(id, usage string) bramatest.Reply {
	return bramatest.RawReply(`{"model":"claude-sonnet","choices":[{"message":{"content":null,"tool_calls":[{"id":"` + id +
		`","type":"function","function":{"name":"singularity_memory_recall","arguments":"{\"query\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":` + usage + `}`)
}

// cacheWorld is a bearer-gateway world whose model is priced like
// Anthropic's through an OpenAI-compatible proxy: 3 USD per million input
// tokens, 15 output, 0.3 cached, 3.75 cache write.
func cacheWorld(t *testing.T) *world {
	w := newGatewayWorld(t, "bearer", "claude-sonnet")
	prices := filepath.Join(w.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"claude-sonnet": {"input_usd_per_million": "3", "output_usd_per_million": "15",
	  "cached_input_usd_per_million": "0.3", "cache_write_input_usd_per_million": "3.75"}}`), 0o600))
	w.env["BRAMA_PRICES_FILE"] = prices
	w.env["SINGULARITY_MAX_TOOL_ROUNDS"] = "16"
	return w
}

// TestUndecodableCacheCountIsBilled: a cache count that is not a token
// count is one quirk of a provider, not a reason to die
// (docs/brama.md#lenient-validation): `once` goes on through each form,
// every prompt token of the round is debited at the input price (2000 ×
// 3 + 400 × 15 per million: 0.012, where the provider bills at most
// 0.0066) with the inconsistent cache counts' warning; and `run` lives
// on through such answers until it is stopped.
func TestUndecodableCacheCountIsBilled(t *testing.T) {
	t.Parallel()
	w := cacheWorld(t)
	forms := []string{
		`"prompt_tokens_details":{"cached_tokens":2000.0}`,
		`"prompt_tokens_details":{"cached_tokens":"2000"}`,
		`"prompt_tokens_details":{"cached_tokens":-5}`,
		`"prompt_tokens_details":{"cached_tokens":100.5}`,
		`"prompt_tokens_details":{"cached_tokens":1e30}`,
		`"prompt_tokens_details":{"cached_tokens":18446744073709551616}`,
		`"prompt_tokens_details":[]`,
	}
	for i, form := range forms {
		w.brama.Enqueue(recallReply(fmt.Sprintf("c%d", i), `{"prompt_tokens":2000,"completion_tokens":400,"total_tokens":2400,`+form+`}`))
	}
	w.brama.Enqueue(bramatest.ModelReply("claude-sonnet", bramatest.TextReply("done", bramatest.Usage(1000, 10))))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"final_content": "done"`)

	events := w.journal()
	want := make([]string, len(forms))
	warned := make([]string, len(forms))
	for i := range forms {
		want[i], warned[i] = "0.012", warnCacheCounts
	}
	assert.Equal(t, append(want, "0.00315"), debits(events)) // 1000×3 + 10×15 last
	assert.Equal(t, warned, warnings(events))
	st := w.loadState()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))

	// run: every answer carries a cached count of 2000.0.
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.RawReply(`{"model":"claude-sonnet","choices":[{"message":{"content":"a quiet cycle"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":2000,"completion_tokens":400,"prompt_tokens_details":{"cached_tokens":2000.0}}}`)
	})
	p := w.start("run", "--resume")
	w.waitJournal(waitLimit, "three more cycles", cyclesStarted(4))
	p.signal(syscall.SIGTERM)
	r = p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	st = w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status, "the quirk never failed the being")
	events = w.journal()
	got := debits(events)
	require.Greater(t, len(got), len(forms)+1+2)
	for _, d := range got[len(forms)+1:] {
		assert.Equal(t, "0.012", d)
	}
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestCacheCountsBeyondThePromptBilledInFull: cache counts the prompt
// tokens cannot hold are debited at the block's larger reading, never
// below what the provider bills (docs/brama.md#cached-prompt-tokens):
// 500 prompt tokens beside 1,500 cache reads and 1,000 cache writes cost
// what Anthropic bills, 0.0087, not 0.0045; DeepSeek's 4,000 cache misses
// beside 2,000 hits for 2,000 prompt tokens cost 0.0186, not 0.0066.
// Both are warned about and journaled as the reading debited; hits and
// misses that add up are priced as before.
func TestCacheCountsBeyondThePromptBilledInFull(t *testing.T) {
	t.Parallel()
	w := cacheWorld(t)
	w.brama.Enqueue(
		recallReply("c1", `{"prompt_tokens":500,"completion_tokens":200,"total_tokens":700,"cache_read_input_tokens":1500,"cache_creation_input_tokens":1000}`),
		recallReply("c2", `{"prompt_tokens":2000,"completion_tokens":400,"total_tokens":2400,"prompt_cache_hit_tokens":2000,"prompt_cache_miss_tokens":4000}`),
		recallReply("c3", `{"prompt_tokens":2000,"completion_tokens":400,"total_tokens":2400,"prompt_cache_hit_tokens":1500,"prompt_cache_miss_tokens":500}`),
		bramatest.ModelReply("claude-sonnet", bramatest.TextReply("done", bramatest.Usage(1000, 10))),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	events := w.journal()
	assert.Equal(t, []string{
		"0.0087",  // 500×3 + 1500×0.3 + 1000×3.75 + 200×15
		"0.0186",  // 4000×3 + 2000×0.3 + 400×15
		"0.00795", // 500×3 + 1500×0.3 + 400×15
		"0.00315",
	}, debits(events))
	assert.Equal(t, []string{warnCacheCounts, warnCacheCounts}, warnings(events))
	var completed []string
	for _, e := range events {
		if e.Type == state.EventModelCompleted {
			completed = append(completed, fmt.Sprintf("%d/%d/%d/%d", e.Usage.PromptTokens, e.Usage.CachedTokens, e.Usage.CacheWriteTokens, e.Usage.CompletionTokens))
		}
	}
	assert.Equal(t, []string{"3000/1500/1000/200", "6000/2000/0/400", "2000/1500/0/400", "1000/0/0/10"}, completed,
		"the journal holds the reading debited, so the debit can be priced again from it")
	st := w.loadState()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestZeroPromptTokensChargeTheReservation: a usage block that reports no
// prompt tokens for a request of thousands of bytes (an empty block, all
// zeros, prompt_tokens left out) is charged the completion's reservation
// with a warning by another gateway, and refused by Brama, whose refusal
// is charged the same (docs/brama.md#implausible-usage).
func TestZeroPromptTokensChargeTheReservation(t *testing.T) {
	t.Parallel()
	reservation := func(body []byte) string {
		// Every request byte at 0.15, max_tokens 2048 at 0.6, per million.
		return money.FromInt(int64(len(body))).Mul(testkit.USD("0.15")).Add(money.FromInt(2048).Mul(testkit.USD("0.6"))).QuoUp(money.FromInt(1_000_000)).String()
	}

	t.Run("lenient", func(t *testing.T) {
		t.Parallel()
		w := newGatewayWorld(t, "bearer", "gpt-small")
		for i, usage := range []string{`{}`, `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, `{"completion_tokens":100,"total_tokens":100}`} {
			w.brama.Enqueue(bramatest.RawReply(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c` + fmt.Sprint(i) +
				`","type":"function","function":{"name":"singularity_memory_recall","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":` + usage + `}`))
		}
		w.brama.Enqueue(bramatest.TextReply("done", bramatest.Usage(1000, 10)))
		r := w.run("once")
		require.Equal(t, 0, r.code, r.stderr)
		reqs := w.brama.Completions()
		require.Len(t, reqs, 4)
		events := w.journal()
		assert.Equal(t, []string{reservation(reqs[0].Body), reservation(reqs[1].Body), reservation(reqs[2].Body), "0.000156"}, debits(events))
		const warned = "completion reported no prompt tokens; charged its reservation"
		assert.Equal(t, []string{warned, warned, warned}, warnings(events))
		require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, events))
	})

	t.Run("strict", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, `{}`)
		w.brama.Enqueue(bramatest.RawReply(`{"choices":[{"message":{"content":"free?"},"finish_reason":"stop"}],"usage":{}}`))
		r := w.run("once")
		assert.Equal(t, 3, r.code, r.stderr)
		reqs := w.brama.Completions()
		require.Len(t, reqs, 1)
		assert.Equal(t, fmt.Sprintf("singularity: brama: inconsistent usage: 0 prompt tokens for a request of %d bytes", len(reqs[0].Body)), r.errorLine())
		events := w.journal()
		assert.Equal(t, []string{reservation(reqs[0].Body)}, debits(events), "the refusal is billed")
		require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, events))
	})
}
