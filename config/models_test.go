package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPromptCaching: BRAMA_PROMPT_CACHE_KEY is off unless set, and the
// models the metrics label by are BRAMA_MODEL and the prices file's
// (docs/debug.md#metrics), sorted, each once.
func TestPromptCaching(t *testing.T) {
	f := newFixture(t)
	rt, err := Load(f.flags(), noEnv)
	require.NoError(t, err)
	assert.False(t, rt.Brama.PromptCacheKey)
	assert.Equal(t, []string{"any"}, rt.Brama.Models())

	prices := filepath.Join(f.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{
	  "sim-small": {"input_usd_per_million": "0.15", "output_usd_per_million": "0.6", "cached_input_usd_per_million": "0.015"},
	  "any":       {"input_usd_per_million": "1", "output_usd_per_million": "2"}}`), 0o600))
	rt, err = Load(withFlags(f.flags(), func(fl *Flags) {
		fl.Brama.CacheKey = true
		fl.Brama.PricesFile = prices
	}), noEnv)
	require.NoError(t, err)
	assert.True(t, rt.Brama.PromptCacheKey)
	assert.Equal(t, []string{"any", "sim-small"}, rt.Brama.Models())
	assert.Equal(t, "0.015", rt.Brama.Prices.File["sim-small"].Cached().String())
	assert.Equal(t, "1", rt.Brama.Prices.File["any"].Cached().String(), "the cached price defaults to the input price")
}
