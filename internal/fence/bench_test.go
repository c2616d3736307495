package fence

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
)

// BenchmarkFencedCommit measures a fenced step against a loopback etcd:
// the durable engine appends and fsyncs one event to a real journal,
// then the fence's transaction commits it. "one-being" runs one being's
// steps one after another; "100-beings" runs 100 beings at once, each
// step after the last, with and without a batcher. It reports each
// step's latency (p50-ms, p99-ms), the steps per second and the etcd
// transactions per step.
func BenchmarkFencedCommit(b *testing.B) {
	for _, c := range []struct {
		name    string
		beings  int
		batched bool
	}{
		{"one-being", 1, false},
		{"100-beings-batched", 100, true},
		{"100-beings-unbatched", 100, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := etcdtest.Start(b)
			s := member(b, srv, "bench")
			var batch *Batcher
			if c.batched {
				batch = NewBatcher(s)
				defer batch.Close()
			}
			engines := make([]*durable.Engine, c.beings)
			for i := range engines {
				engines[i], _ = being(b, NewCommitter(lock(b, s, fmt.Sprintf("being-%d", i)), batch))
			}
			steps := max(1, (b.N+c.beings-1)/c.beings)
			took := make([][]time.Duration, c.beings)
			var wg sync.WaitGroup
			b.ResetTimer()
			began := time.Now()
			for i, e := range engines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range steps {
						at := state.Now()
						t0 := time.Now()
						out := e.Step(0, []state.Event{state.Warning(at, 0, "step")}, at, 0)
						took[i] = append(took[i], time.Since(t0))
						if _, ok := out[0].(durable.Committed); !ok {
							b.Errorf("being %d: %#v", i, out)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(began)
			b.StopTimer()
			all := slices.Concat(took...)
			slices.Sort(all)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
			b.ReportMetric(ms(all[min(len(all)-1, len(all)*99/100)]), "p99-ms")
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "steps/s")
			if batch != nil {
				txns, _ := batch.Stats()
				b.ReportMetric(float64(txns)/float64(len(all)), "txns/step")
			}
		})
	}
}
