package family_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// TestLedgerEqualsGatewayBill lives the demo family (spawning, earning,
// Las and built-in tools) for four cycles of every being against the
// simulated Brama, which caches prompt prefixes and keeps its own exact
// bill (docs/demo.md#the-prompt-cache). With a cached price a tenth of
// the input price and BRAMA_PROMPT_CACHE_KEY on, each being's ledger
// (api_spent, and the API parts of its journal's debits) equals what the
// gateway billed it, to the last digit, and the cache did serve tokens.
// The prices have at most six decimals, so no completion's cost needs
// rounding at the ledger's 12 places.
func TestLedgerEqualsGatewayBill(t *testing.T) {
	const cycles = 4
	cached := testkit.USD("0.015")
	table := prices.Table{"any": {Input: testkit.USD("0.15"), Output: testkit.USD("0.6"), CachedInput: &cached}}
	dir := filepath.Join(t.TempDir(), "state")
	q := newQuiet(testkit.Identity().AgentID, cycles)
	w := startWorld(t, worldConfig{dir: dir, observer: q, maxCycles: cycles, prices: table, cacheKey: true})
	select {
	case <-q.done:
	case <-time.After(longWait):
		t.Fatalf("the family never went quiet: %v", q.expected)
	}
	// Quiet: every being has ended its last cycle, so no completion is
	// on the wire and every debit is durable in its journal. The last
	// cycle's checkpoint is written in the background, so state.json is
	// read once the family has stopped, its final checkpoints durable.
	require.NoError(t, w.shutdown().Err)
	accounts := w.brama.Accounts()
	family, err := journalview.Family(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(family), 3, "the root spawned")
	require.Len(t, accounts, len(family), "one caller per being: its prompt_cache_key")

	spent, cachedTokens := money.Zero, uint64(0)
	for _, b := range family {
		account, ok := accounts[b.ID]
		require.True(t, ok, "%s (%s) called the gateway under its own id", b.Name, b.ID)
		events, err := state.ReadAll(b.Dir)
		require.NoError(t, err)
		st, err := state.Load(b.Dir)
		require.NoError(t, err)
		api, completions, journaledCached := money.Zero, uint64(0), uint64(0)
		for _, e := range events {
			switch e.Type {
			case state.EventModelCompleted:
				completions++
				journaledCached += e.Usage.CachedTokens
			case state.EventCostDebited:
				api = api.Add(e.API)
			}
		}
		assert.Equal(t, account.Completions, completions, "%s: every completion billed is journaled", b.Name)
		assert.Equal(t, account.CachedTokens, journaledCached, "%s: the journal holds the cached tokens the gateway reported", b.Name)
		assert.Equal(t, account.Billed.String(), api.String(), "%s: the journal's debits are the gateway's bill", b.Name)
		assert.Equal(t, account.Billed.String(), st.Budget.APISpent.String(), "%s: api_spent is the gateway's bill", b.Name)
		require.NoError(t, testkit.CheckInvariant(st.Budget, events))
		spent = spent.Add(st.Budget.APISpent)
		cachedTokens += account.CachedTokens
	}
	assert.Equal(t, w.brama.Bill().String(), spent.String(), "the family's ledgers are the gateway's whole bill")
	assert.Positive(t, cachedTokens, "the gateway served cached tokens, priced at the cached price")
	t.Logf("%d beings, %d cached prompt tokens, billed %s USD", len(family), cachedTokens, spent)
}
