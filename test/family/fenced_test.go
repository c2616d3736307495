package family_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/test/etcdtest"
)

// holdAll takes the lock of a family rooted at root on a session of its
// own and returns the hold every being of the family loads through; the
// session and its batcher end with the test.
func holdAll(tb testing.TB, etcd *etcdtest.Server, root string) *member.Holding {
	tb.Helper()
	s, err := fence.Open(fence.Config{Endpoints: etcd.Endpoints(), Family: "scale"})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := s.Lock(ctx, member.RootBeing)
	if err != nil {
		tb.Fatal(err)
	}
	batch := fence.NewBatcher(s)
	tb.Cleanup(func() {
		batch.Close()
		_ = s.Close()
	})
	return member.NewHolding(s, lock, batch, root, 10*time.Second)
}

// BenchmarkFamilyFenced measures the family's throughput in one process
// with every step fenced by etcd, as the member holding a family across
// processes runs it (docs/cluster.md#cost), against the same family
// unfenced, in one run: FENCED_BEINGS beings (default 300) living two
// cycles against a zero-latency Brama, built-in tools only, a window of
// 24 messages, each step fsynced on the tests' temporary directory;
// then rounds/s and the heap per being after those two cycles. One op
// is one model round of any being.
func BenchmarkFamilyFenced(b *testing.B) {
	if _, err := exec.LookPath("etcd"); err != nil {
		b.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	k := 300
	if v := os.Getenv("FENCED_BEINGS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("FENCED_BEINGS: %q is not a number of beings", v)
		}
		k = n
	}
	etcd := etcdtest.Start(b)
	for _, fenced := range []bool{false, true} {
		name := "fence=none"
		cfg := scaleConfig{beings: k, life: 2, window: 24, dir: b.TempDir()}
		if fenced {
			// Held by the outer benchmark: the runs of the sub-benchmark
			// share one family.
			name, cfg.hold = "fence=etcd", holdAll(b, etcd, cfg.dir)
		}
		var sw *scaleWorld
		b.Run(name, func(b *testing.B) {
			if sw == nil {
				sw = startScale(b, cfg)
			}
			sw.rounds(b)
			b.ReportMetric(float64(sw.figures.heap)/float64(k), "heap-B/being")
		})
		if sw != nil {
			sw.stop(b)
		}
	}
}
