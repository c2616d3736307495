package simbrama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

func TestCachedTokensRule(t *testing.T) {
	for _, c := range []struct {
		common int
		want   uint64
	}{
		{0, 0}, {4095, 0}, {4096, 1024}, {4099, 1024}, // 1023 whole tokens, then 1024
		{4096 + 511, 1024}, {4096 + 512, 1152}, {4096 + 5*512 + 3, 1664},
		{-1, 0},
	} {
		assert.Equal(t, c.want, CachedTokens(c.common), "common prefix of %d bytes", c.common)
	}
	assert.Equal(t, uint64(0), Tokens(0))
	assert.Equal(t, uint64(1), Tokens(1))
	assert.Equal(t, uint64(1), Tokens(4))
	assert.Equal(t, uint64(2), Tokens(5))
}

// TestCacheServe: a prompt is cached by its longest common prefix with
// any of its caller's last 16 prompts, and only its caller's.
func TestCacheServe(t *testing.T) {
	c := NewCache()
	base := bytes.Repeat([]byte("abcd"), 2000) // 8000 bytes, 2000 tokens
	longer := append(append([]byte(nil), base...), "efgh"...)
	tokens, cached := c.Serve("ada", base)
	assert.Equal(t, uint64(2000), tokens)
	assert.Zero(t, cached, "nothing is cached the first time")
	tokens, cached = c.Serve("ada", longer)
	assert.Equal(t, uint64(2001), tokens)
	assert.Equal(t, uint64(1024+7*128), cached, "2000 common tokens: the minimum and seven whole blocks")
	_, cached = c.Serve("bo", longer)
	assert.Zero(t, cached, "another caller's prompts are not its cache")
	_, cached = c.Serve("ada", longer)
	assert.Equal(t, uint64(1024+7*128), cached, "an identical prompt is cached in whole blocks too")
	short := base[:4096]
	tokens, cached = c.Serve("ada", short)
	assert.Equal(t, uint64(1024), tokens)
	assert.Equal(t, uint64(1024), cached, "a prompt may be cached whole")

	// After 16 other prompts, the first is forgotten.
	for i := range CacheDepth {
		_, _ = c.Serve("cy", []byte(fmt.Sprintf("%04d", i)+strings.Repeat("x", 5000)))
	}
	_, cached = c.Serve("cy", []byte("0000"+strings.Repeat("x", 5000)))
	assert.Equal(t, uint64(1024+128), cached, "the first is still among the last 16")
	for i := range CacheDepth {
		_, _ = c.Serve("cy", []byte(fmt.Sprintf("%04d", 100+i)+strings.Repeat("x", 5000)))
	}
	_, cached = c.Serve("cy", []byte("0000"+strings.Repeat("x", 5000)))
	assert.Zero(t, cached, "16 later prompts pushed it out")

	// Serve keeps its own copy of the prompt.
	d := NewCache()
	buf := bytes.Repeat([]byte("z"), 4096)
	_, _ = d.Serve("di", buf)
	buf[0] = 'y'
	_, cached = d.Serve("di", bytes.Repeat([]byte("z"), 4096))
	assert.Equal(t, uint64(1024), cached)
}

// TestServerCachesAndBills: over HTTP, a being's second round is cached
// by its prefix with the first, the usage says so in OpenAI's form, a
// prompt_cache_key keeps callers apart, and the bill is exact at the
// configured prices.
func TestServerCachesAndBills(t *testing.T) {
	opts := demoOpts
	opts.Now = func() time.Time { return testNow }
	cachedPrice := money.FromInt(3).QuoDown(money.FromInt(100))
	opts.Prices = prices.Table{"sim-small": {Input: money.FromInt(3).QuoDown(money.FromInt(10)), Output: money.FromInt(1), CachedInput: &cachedPrice}}
	opts.Price = prices.Pair{Input: money.FromInt(7), Output: money.FromInt(7)}
	s, err := Start(testSecret, opts)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		require.NoError(t, s.Close())
	})
	system := systemFor("Ada")
	system.Content += strings.Repeat(" Think before you act.", 300) // a long stable prefix
	first := []chat.Message{system, framing(1)}
	second := append(append([]chat.Message(nil), first...), doneRounds(1)...)
	ask := func(model, key string, msgs []chat.Message) (wireCompletion, chat.UsageReport) {
		t.Helper()
		body := map[string]any{"model": model, "messages": msgs, "tools": catalogue()}
		if key != "" {
			body["prompt_cache_key"] = key
		}
		code, raw := newSigned(mustJSON(t, body)).send(t, s, client)
		require.Equal(t, http.StatusOK, code, string(raw))
		var report struct {
			Usage chat.UsageReport `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(raw, &report))
		return checkShape(t, raw), report.Usage
	}
	messagesBytes := func(msgs []chat.Message) uint64 { return Tokens(len(mustJSON(t, msgs))) }

	w1, r1 := ask("sim-small", "", first)
	assert.Equal(t, messagesBytes(first), w1.Usage.PromptTokens, "prompt tokens are ⌈bytes/4⌉ of the messages as sent")
	assert.Nil(t, r1.PromptTokensDetails, "nothing cached yet")
	w2, r2 := ask("sim-small", "", second)
	require.NotNil(t, r2.PromptTokensDetails)
	cached := *r2.PromptTokensDetails.CachedTokens
	assert.GreaterOrEqual(t, cached, uint64(CacheMinTokens))
	assert.Equal(t, uint64(0), (cached-CacheMinTokens)%CacheBlockTokens)
	assert.Less(t, cached, w2.Usage.PromptTokens)
	_, r3 := ask("sim-large", "being-bo", second)
	assert.Nil(t, r3.PromptTokensDetails, "another cache key is another caller")
	_, r4 := ask("sim-large", "being-bo", first)
	require.NotNil(t, r4.PromptTokensDetails, "a prompt that is a prefix of an earlier one")

	accounts := s.Accounts()
	require.Len(t, accounts, 2)
	ada := accounts["agent-ada"] // no key: the x-agent-id
	assert.Equal(t, uint64(2), ada.Completions)
	assert.Equal(t, cached, ada.CachedTokens)
	assert.Equal(t, w1.Usage.PromptTokens+w2.Usage.PromptTokens, ada.PromptTokens)
	assert.Equal(t, w1.Usage.CompletionTokens+w2.Usage.CompletionTokens, ada.CompletionTokens)
	// At 0.3 input, 0.03 cached, 1 output per million, never rounded.
	want := money.FromUint(ada.PromptTokens - ada.CachedTokens).Mul(money.FromInt(3)).QuoDown(money.FromInt(10)).
		Add(money.FromUint(ada.CachedTokens).Mul(cachedPrice)).
		Add(money.FromUint(ada.CompletionTokens))
	assert.Equal(t, want.String(), ada.Billed.Mul(money.FromInt(1_000_000)).String())
	bo := accounts["being-bo"]
	assert.Equal(t, uint64(2), bo.Completions)
	assert.Equal(t, *r4.PromptTokensDetails.CachedTokens, bo.CachedTokens)
	// sim-large is not in the table: every token at the fallback's 7.
	assert.Equal(t, money.FromUint(7*(bo.PromptTokens+bo.CompletionTokens)).String(), bo.Billed.Mul(money.FromInt(1_000_000)).String())
	assert.Equal(t, ada.Billed.Add(bo.Billed).String(), s.Bill().String())
	st := s.Stats()
	assert.Equal(t, cached+bo.CachedTokens, st.CachedTokens)
	assert.Equal(t, uint64(4), st.Completions)
}
