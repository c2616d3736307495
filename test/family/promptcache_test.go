package family_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// cacheLife is what one life against the caching gateway showed over
// its measured cycles.
type cacheLife struct {
	prompt, cached uint64       // prompt tokens, and the cached part
	spent          money.Amount // the API debits
	cycles         uint64
}

// cachedShare is the share of prompt tokens the gateway served cached.
func (l cacheLife) cachedShare() float64 { return float64(l.cached) / float64(max(l.prompt, 1)) }

// perCycle is the API spending per measured cycle, in USD (a float for
// the report; the ledger's sums are exact).
func (l cacheLife) perCycle() float64 {
	f, _ := l.spent.Rat().Float64()
	return f / float64(max(l.cycles, 1))
}

// promptCacheLife lives one being alone for cycles cycles with the
// demo world's script (each cycle a memory, then a finance call through
// the example Las, then a reply) against the simulated Brama with its
// prompt cache, at a cached price a tenth of the input price, with the
// being's id as prompt_cache_key. It checks that the being's ledger is
// the gateway's own bill to the last digit, and returns the figures of
// cycles from to cycles.
func promptCacheLife(tb testing.TB, layout prompt.Layout, cycles uint64, window int, from uint64) cacheLife {
	tb.Helper()
	cachedPrice := testkit.USD("0.015")
	table := prices.Table{"any": {Input: testkit.USD("0.15"), Output: testkit.USD("0.6"), CachedInput: &cachedPrice}}
	dir := filepath.Join(tb.TempDir(), "state")
	q := newQuiet(testkit.Identity().AgentID, cycles)
	w := startWorld(tb, worldConfig{dir: dir, observer: q, maxCycles: cycles, prices: table, cacheKey: true,
		single: true, layout: layout, window: window, balance: testkit.USD("1000"), interval: -1})
	select {
	case <-q.done:
	case <-time.After(10 * time.Minute):
		tb.Fatalf("%s: the being never ended cycle %d", layout, cycles)
	}
	// Stopped, the being's last checkpoint holds every debit (in run
	// the cycle-end checkpoint may still be on its way when it idles).
	if stopped := w.shutdown(); stopped.Err != nil {
		tb.Fatalf("%s: the family stopped with %v", layout, stopped.Err)
	}
	accounts := w.brama.Accounts()
	if len(accounts) != 1 {
		tb.Fatalf("%s: %d callers of the gateway, want the one being", layout, len(accounts))
	}
	st, err := state.Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	events, err := state.ReadAll(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, account := range accounts {
		if account.Billed.String() != st.Budget.APISpent.String() {
			tb.Fatalf("%s: the ledger spent %s on the model, the gateway billed %s", layout, st.Budget.APISpent, account.Billed)
		}
	}
	if err := testkit.CheckInvariant(st.Budget, events); err != nil {
		tb.Fatal(err)
	}
	var l cacheLife
	for _, e := range events {
		if e.Cycle < from || e.Cycle > cycles {
			continue
		}
		switch e.Type {
		case state.EventModelCompleted:
			l.prompt += e.Usage.PromptTokens
			l.cached += e.Usage.CachedTokens
		case state.EventCostDebited:
			l.spent = l.spent.Add(e.API)
		case state.EventCycleStarted:
			l.cycles++
		}
	}
	return l
}

// TestPromptCacheLayouts lives a shorter life in each layout (80 cycles,
// a window of 60, measured from cycle 40): in both the ledger is the
// gateway's bill to the last digit, and the stable layout has most of its
// prompt served from the cache, far more than the seed layout, at a
// fraction of its cost.
func TestPromptCacheLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("two lives of 80 cycles")
	}
	seed := promptCacheLife(t, prompt.LayoutSeed, 80, 60, 40)
	stable := promptCacheLife(t, prompt.LayoutStable, 80, 60, 40)
	t.Logf("cycles 40–80, window 60: seed %.1f %% cached, %.6f USD/cycle; stable %.1f %% cached, %.6f USD/cycle",
		100*seed.cachedShare(), seed.perCycle(), 100*stable.cachedShare(), stable.perCycle())
	assert.Greater(t, stable.cachedShare(), 0.7)
	assert.Greater(t, stable.cachedShare(), seed.cachedShare()+0.3)
	assert.Less(t, stable.perCycle(), 0.6*seed.perCycle())
}

// BenchmarkPromptCache is a long cached life: 300 cycles of a growing mind
// (a memory every cycle, a Las call and a built-in per cycle) with the
// default window of 200 messages, against the caching gateway, once per
// layout. It reports, over cycles 200–300, cached-% (the share of prompt
// tokens served cached) and usd/cycle (the API spending at a cached
// price of 10 % of the input price). One op is one whole life: run it
// with -benchtime 1x.
func BenchmarkPromptCache(b *testing.B) {
	for _, layout := range []prompt.Layout{prompt.LayoutSeed, prompt.LayoutStable} {
		b.Run("layout="+string(layout), func(b *testing.B) {
			for b.Loop() {
				l := promptCacheLife(b, layout, 300, 200, 200)
				b.ReportMetric(100*l.cachedShare(), "cached-%")
				b.ReportMetric(l.perCycle(), "usd/cycle")
			}
		})
	}
}
