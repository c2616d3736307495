package being_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
)

// longLifeCycles is how long the being of BenchmarkLongLife lives; each
// cycle is two rounds (a memory call, then a plain reply).
const longLifeCycles = 1500

// BenchmarkLongLife measures the long-life target of
// docs/differences.md#measured-targets: a being's round rate late in a long
// life against its rate in its first cycles. A zero-latency in-process Brama
// answers round 1 of every cycle with a memory call and round 2 with a plain
// reply; built-in tools only; the default window of 200 messages. The being
// lives longLifeCycles cycles whatever b.N is (run it with -benchtime 1x);
// the metrics are the round rates of the first and the last 100 cycles and
// their ratio.
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
	srv := bramatest.Start(b, bramatest.Config{Secret: []byte(testSecret), DiscardRequests: true})
	const window = 100 // cycles measured at each end
	var (
		mu       sync.Mutex
		served   int
		stamps   = map[int]time.Time{}
		finished = make(chan struct{})
	)
	marks := []int{1, 2 * window, 2*(longLifeCycles-window) + 1, 2 * longLifeCycles}
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		mu.Lock()
		served++
		n := served
		for _, m := range marks {
			if n == m {
				stamps[n] = time.Now()
			}
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
		require.NoError(b, state.CheckInvariant(st.Budget, h.journal()))
	}
	mu.Lock()
	defer mu.Unlock()
	rate := func(from, to int) float64 {
		return float64(to-from) / stamps[to].Sub(stamps[from]).Seconds()
	}
	early := rate(marks[0], marks[1])
	late := rate(marks[2], marks[3])
	b.ReportMetric(early, "early-rounds/s")
	b.ReportMetric(late, "late-rounds/s")
	b.ReportMetric(late/early, "late/early")
}
