package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInitWritesCataloguePrices: init for a model the catalogue knows
// writes its real prices, cache prices included, and `singularity
// prices` shows them and their source: the prices file init wrote, and
// the catalogue for the same model without it
// (docs/configuration.md#init, docs/brama.md#the-price-catalogue).
func TestInitWritesCataloguePrices(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "anthropic.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-ant-test\n"), 0o600))
	dir := filepath.Join(t.TempDir(), "being")
	r := run(t, map[string]string{}, "init", dir, "--base-url", "https://api.anthropic.com/v1", "--model", "claude-sonnet-4-5-20250929", "--key-file", key)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "prices of claude-sonnet-4-5-20250929: the catalogue (Anthropic claude-sonnet-4-5, @pydantic/genai-prices ")
	data, err := os.ReadFile(filepath.Join(dir, "prices.json"))
	require.NoError(t, err)
	var written map[string]map[string]string
	require.NoError(t, json.Unmarshal(data, &written))
	assert.Equal(t, map[string]map[string]string{"claude-sonnet-4-5-20250929": {
		"input_usd_per_million": "3", "output_usd_per_million": "15",
		"cached_input_usd_per_million": "0.3", "cache_write_input_usd_per_million": "3.75",
	}}, written)

	cfg := filepath.Join(dir, "singularity.toml")
	r = run(t, map[string]string{}, "--config", cfg, "prices", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var report map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	assert.Equal(t, "claude-sonnet-4-5-20250929", report["model"])
	assert.Equal(t, "prices file", report["source"])
	assert.Equal(t, "3.75", report["cache_write_input_usd_per_million"])
	assert.Equal(t, false, report["free"])

	r = run(t, map[string]string{}, "prices", "gpt-4o-mini")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "gpt-4o-mini: catalogue (OpenAI, @pydantic/genai-prices ")
	assert.Contains(t, r.stdout, "  input        0.15 USD per million tokens\n")
	assert.Contains(t, r.stdout, "  cached input 0.075 USD per million tokens\n")
	r = run(t, map[string]string{"BRAMA_INPUT_PRICE_USD_PER_MILLION": "1"}, "prices", "my-model")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "my-model: price options\n")
	assert.Contains(t, r.stdout, "free: charged nothing")
}

// TestInitRefusesAnUnknownModelWithoutPrices: for a model the catalogue
// does not know, init without --prices is refused, and so is a zero
// price for a bearer gateway; a keyless server may be written at 0.
func TestInitRefusesAnUnknownModelWithoutPrices(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "provider.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-test\n"), 0o600))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--key-file", key}, "configuration: init: model my-model is not in the price catalogue: --prices is required"},
		{[]string{"--auth", "none"}, "configuration: init: model my-model is not in the price catalogue: --prices is required"},
		{[]string{"--key-file", key, "--prices", "0,0"}, `configuration: init: --prices: model "my-model" would run free on a bearer gateway, which bills it: give its prices`},
		{[]string{"--key-file", key, "--prices", "1,0"}, `configuration: init: --prices: model "my-model" would run free on a bearer gateway, which bills it: give its prices`},
	}
	for _, tc := range cases {
		dir := filepath.Join(t.TempDir(), "being")
		r := run(t, map[string]string{}, append([]string{"init", dir, "--base-url", "http://localhost:8080/v1", "--model", "my-model"}, tc.args...)...)
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Equal(t, "singularity: "+tc.want+"\n", r.stderr)
		assert.NoDirExists(t, dir, "nothing was written")
	}
	dir := filepath.Join(t.TempDir(), "being")
	r := run(t, map[string]string{}, "init", dir, "--base-url", "http://localhost:8080/v1", "--model", "my-model", "--auth", "none", "--prices", "0,0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "prices of my-model: --prices\n")
}
