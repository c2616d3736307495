package being_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// longLifeCycles is how long the being of BenchmarkLongLife lives; each
// cycle is two rounds (a memory call, then a plain reply).
const longLifeCycles = 1500

// BenchmarkLongLife measures the long-life target of
// docs/differences.md#measured-targets: a being's round rate late in a
// long life against its rate in its first cycles. A zero-latency
// in-process Brama (skimming each body, as in BenchmarkRound: a full
// decode grows with the window, which fills during the early cycles)
// answers round 1 of every cycle with a memory call and round 2 with a
// plain reply; built-in tools only; the default window of 200 messages.
// The being lives longLifeCycles cycles whatever b.N is (run it with
// -benchtime 1x). Its round rate is sampled every 10 cycles;
// early-rounds/s and late-rounds/s are the medians of the ten samples of
// the first and of the last 100 cycles, late/early their ratio (a stall of
// the shared disk or CPU in one sample moves a median little), and
// late/early-whole the ratio of the two windows' whole rates.
//
// "recall" leaves the mind as it is, so the ratio shows what the runtime
// itself carries as the being ages (the window keeps it near 1 while the
// journal and archive grow); "remember" adds a memory every cycle, so the
// mind itself grows to its cap of 1000 memories
// (docs/tools.md#built-in-tools), which each checkpoint carries (a memory
// costs the round only its journal step); "full-mind" starts with 1000
// memories of 16 KiB and remembers another of 16 KiB every cycle, so
// every checkpoint (one per cycle) carries 16 MiB from first to last.
func BenchmarkLongLife(b *testing.B) {
	remember := func(n int) string { return fmt.Sprintf(`{"kind":"lead","text":"lead number %d"}`, n) }
	b.Run("recall", func(b *testing.B) {
		benchmarkLongLife(b, "singularity_memory_recall", func(int) string { return `{"query":"lead"}` }, nil)
	})
	b.Run("remember", func(b *testing.B) {
		benchmarkLongLife(b, "singularity_memory_remember", remember, nil)
	})
	b.Run("full-mind", func(b *testing.B) {
		big := func(n int) string {
			return fmt.Sprintf(`{"kind":"lead","text":"%d %s"}`, n, strings.Repeat("x", 16<<10-8))
		}
		benchmarkLongLife(b, "singularity_memory_remember", big, func(st *state.Being) {
			text := strings.Repeat("x", 16<<10)
			for i := range state.MaxMemories {
				st.Mind.Memories = append(st.Mind.Memories, state.Memory{ID: fmt.Sprint("m", i), Kind: "lead", Text: text, CreatedAt: st.StartedAt})
			}
		})
	})
}

func benchmarkLongLife(b *testing.B, tool string, args func(n int) string, mind func(*state.Being)) {
	srv := bramatest.Start(b, bramatest.Config{Secret: []byte(testSecret), DiscardRequests: true, SkimRequests: true})
	const (
		window = 100 // cycles measured at each end
		chunk  = 10  // cycles per rate sample
	)
	var (
		mu       sync.Mutex
		served   int
		stamps   = map[int]time.Time{} // at the first request of every chunk, and after the last
		finished = make(chan struct{})
	)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		mu.Lock()
		served++
		n := served
		if (n-1)%(2*chunk) == 0 || n == 2*longLifeCycles {
			stamps[n] = time.Now()
		}
		mu.Unlock()
		if n == 2*longLifeCycles {
			close(finished)
		}
		if n%2 == 1 {
			return bramatest.ToolCallsReply(bramatest.Usage(200, 20), bramatest.Call(fmt.Sprintf("c%d", n), tool, args(n)))
		}
		return bramatest.TextReply("done", bramatest.Usage(200, 5))
	})
	opts := options(b, being.Run)
	opts.MaxCycles = longLifeCycles
	for b.Loop() {
		if served > 0 {
			continue // one long life per benchmark, however many ops are asked for
		}
		st := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
		if mind != nil {
			mind(st)
		}
		h := startWith(b, srv, opts, st)
		select {
		case <-finished:
		case <-time.After(30 * time.Minute):
			b.Fatal("the being did not live its cycles")
		}
		h.shutdown()
		st = h.state()
		require.Equal(b, uint64(longLifeCycles), st.Cycle)
		require.LessOrEqual(b, len(st.Conversation), opts.ContextMessages+4)
		require.NoError(b, testkit.CheckInvariant(st.Budget, h.journal()))
	}
	mu.Lock()
	defer mu.Unlock()
	// A request's number is 2 per cycle: cycle c's first request is
	// 2c-1. The last stamp is the last request, one round short of a
	// chunk's end, so the last chunk counts one round fewer.
	at := func(cycle int) (int, time.Time) {
		n := min(2*cycle+1, 2*longLifeCycles)
		return n, stamps[n]
	}
	rate := func(from, to int) float64 {
		n0, t0 := at(from)
		n1, t1 := at(to)
		return float64(n1-n0) / t1.Sub(t0).Seconds()
	}
	median := func(from int) float64 {
		var rates []float64
		for c := from; c < from+window; c += chunk {
			rates = append(rates, rate(c, c+chunk))
		}
		slices.Sort(rates)
		return (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
	}
	early, late := median(0), median(longLifeCycles-window)
	b.ReportMetric(early, "early-rounds/s")
	b.ReportMetric(late, "late-rounds/s")
	b.ReportMetric(late/early, "late/early")
	b.ReportMetric(rate(longLifeCycles-window, longLifeCycles)/rate(0, window), "late/early-whole")
}
