package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestCachedTokensPricedFromPricesFile runs `once` against a provider
// that reports cached prompt tokens (docs/brama.md#cached-prompt-tokens):
// the prices file's cached and cache-write prices apply, model_completed
// journals the counts (and a completion without them is written as
// before), a usage whose cached count exceeds its prompt is debited at
// its larger reading (the cached tokens beside the prompt) with its
// warning, and with BRAMA_PROMPT_CACHE_KEY the body names the being.
func TestCachedTokensPricedFromPricesFile(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-cached")
	prices := filepath.Join(w.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"gpt-cached": {"input_usd_per_million": "2", "output_usd_per_million": "8",
	  "cached_input_usd_per_million": "0.5", "cache_write_input_usd_per_million": "2.5"}}`), 0o600))
	w.env["BRAMA_PRICES_FILE"] = prices
	w.env["BRAMA_PROMPT_CACHE_KEY"] = "true"

	cached := chat.Usage{PromptTokens: 3000, CompletionTokens: 20, TotalTokens: 3020, CachedTokens: 2048, CacheWriteTokens: 512, ReasoningTokens: 8}
	w.brama.Enqueue(
		bramatest.ModelReply("gpt-cached", bramatest.ToolCallsReply(cached, bramatest.Call("c1", "singularity_memory_recall", `{"query":"x"}`))),
		bramatest.RawReply(`{"model":"gpt-cached","choices":[{"message":{"content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"singularity_memory_recall","arguments":"{}"}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1001}}}`),
		bramatest.ModelReply("gpt-cached", bramatest.TextReply("done", bramatest.Usage(1000, 10))),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	events := w.journal()
	// 440×2 + 2048×0.5 + 512×2.5 + 20×8; 1000×2 + 1001×0.5 + 10×8;
	// 1000×2 + 10×8.
	assert.Equal(t, []string{"0.003344", "0.0025805", "0.00208"}, debits(events))
	assert.Equal(t, []string{warnCacheCounts}, warnings(events))

	raw, err := os.ReadFile(filepath.Join(w.stateDir, "activity.jsonl"))
	require.NoError(t, err)
	var completed []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"type":"model_completed"`) {
			_, usage, _ := strings.Cut(line, `"usage":`)
			usage, _, _ = strings.Cut(usage, `}`)
			completed = append(completed, usage+"}")
		}
	}
	assert.Equal(t, []string{
		`{"prompt_tokens":3000,"completion_tokens":20,"total_tokens":3020,"cached_tokens":2048,"cache_write_tokens":512,"reasoning_tokens":8}`,
		`{"prompt_tokens":2001,"completion_tokens":10,"total_tokens":2011,"cached_tokens":1001}`,
		`{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010}`,
	}, completed, "cache counts journaled only when the provider reported them, as the reading debited")

	for _, req := range w.brama.Completions() {
		assert.True(t, strings.HasSuffix(string(req.Body), `,"prompt_cache_key":"`+w.env["SINGULARITY_AGENT_ID"]+`"}`), "the root's id is its agent id")
	}
	st := w.loadState()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}
