package catalog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShipped: the embedded catalogue parses, names its source, version
// and date, and covers the providers it promises, with cache prices
// where the source has them.
func TestShipped(t *testing.T) {
	c := Shipped()
	assert.Equal(t, "@pydantic/genai-prices", c.Source)
	assert.Regexp(t, `^\d+\.\d+\.\d+$`, c.Version)
	assert.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, c.Date)
	var ids []string
	for _, p := range c.Providers {
		ids = append(ids, p.ID)
		assert.NotEmpty(t, p.Models, p.ID)
	}
	assert.Equal(t, []string{"openai", "anthropic", "google", "deepseek", "mistral", "x-ai", "openrouter"}, ids)
	m, p, ok := c.Find("gpt-4o-mini", "")
	require.True(t, ok)
	assert.Equal(t, "openai", p.ID)
	assert.Equal(t, "0.15", m.Pair().Input.String())
	assert.Equal(t, "0.6", m.Pair().Output.String())
	assert.Equal(t, "0.075", m.Pair().Cached().String())
}

// TestFind: an exact id, a dated release by its longest declared
// prefix, the provider of the base URL first, and an unknown id.
func TestFind(t *testing.T) {
	c := Shipped()
	cases := []struct {
		id, base, provider, input, cacheWrite string
	}{
		{"claude-sonnet-4-5-20250929", "", "anthropic", "3", "3.75"},
		{"anthropic/claude-sonnet-4.5", "https://openrouter.ai/api/v1", "openrouter", "3", "3.75"},
		{"deepseek-chat", "https://api.deepseek.com/v1", "deepseek", "0.27", "0.27"},
		{"grok-3", "", "x-ai", "3", "3"},
	}
	for _, tc := range cases {
		m, p, ok := c.Find(tc.id, tc.base)
		require.True(t, ok, tc.id)
		assert.Equal(t, tc.provider, p.ID, tc.id)
		assert.Equal(t, tc.input, m.Pair().Input.String(), tc.id)
		assert.Equal(t, tc.cacheWrite, m.Pair().CacheWrite().String(), tc.id)
	}
	_, _, ok := c.Find("my-local-model", "")
	assert.False(t, ok)
	_, _, ok = c.Find("", "")
	assert.False(t, ok)
	pair, entry, ok := c.For("https://api.openai.com/v1").Find("gpt-4o")
	require.True(t, ok)
	assert.Equal(t, "2.5", pair.Input.String())
	assert.Equal(t, "openai/gpt-4o", entry)
	_, dated, ok := c.For("").Find("gpt-4o-2024-08-06")
	require.True(t, ok)
	assert.Equal(t, entry, dated, "a dated release is its model's entry")
}

// TestParseRefusesBadPrices: a price that is not a decimal string ≥ 0
// is refused as in a prices file.
func TestParseRefusesBadPrices(t *testing.T) {
	_, err := Parse([]byte(`{"providers": [{"id": "p", "api_pattern": "x", "models": [{"id": "m", "ids": ["m"], "input_usd_per_million": "-1", "output_usd_per_million": "1"}]}]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be negative")
}
