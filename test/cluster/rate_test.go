package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rateBeings is CLUSTER_RATE_BEINGS, the family BenchmarkSpreadRounds
// measures (default 300).
func rateBeings(tb testing.TB) int {
	v := os.Getenv("CLUSTER_RATE_BEINGS")
	if v == "" {
		return 300
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err)
	require.Greater(tb, n, len(familyNames))
	return n
}

// rateWindow is CLUSTER_RATE_SECS, how long rounds are counted (default
// 10 s).
func rateWindow(tb testing.TB) time.Duration {
	v := os.Getenv("CLUSTER_RATE_SECS")
	if v == "" {
		return 10 * time.Second
	}
	secs, err := strconv.Atoi(v)
	require.NoError(tb, err)
	return time.Duration(secs) * time.Second
}

// rateWorld is a world for throughput: the beings pause not at all
// between cycles and have no Las (a servers file without servers: the
// built-in tools only), so that the simulated Brama, which answers at
// once, and the members bound the rate.
func rateWorld(tb testing.TB) *world {
	w := newWorld(tb)
	servers := filepath.Join(tb.TempDir(), "servers.json")
	require.NoError(tb, os.WriteFile(servers, []byte(`{"mcpServers":{}}`), 0o600))
	for _, k := range []string{"LAS_COMMAND", "LAS_MCP_ENTRYPOINT", "LAS_ONLY", "SINGULARITY_REQUIRED_SURFACES"} {
		delete(w.env, k)
	}
	w.env["LAS_SERVERS_FILE"] = servers
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "0"
	return w
}

// rounds counts the family's completions over the window, once every
// being has cycled, and returns them per second.
func (w *world) rounds(tb testing.TB, window time.Duration) float64 {
	tb.Helper()
	// The simulated Brama answers the family's beings only: once it
	// answered as many as there are, each has cycled.
	everyone := func(counts map[string]int) bool { return len(counts) >= len(w.names) }
	require.True(tb, w.seen.until(5*waitLimit, everyone), "every one of %d beings cycled", len(w.names))
	before, _ := w.seen.snapshot()
	began := time.Now()
	time.Sleep(window) // the measurement's window, not a synchronisation
	after, _ := w.seen.snapshot()
	took := time.Since(began)
	n := 0
	for name, c := range after {
		n += c - before[name]
	}
	return float64(n) / took.Seconds()
}

// heap is the Go heap in use of member p, as its /metrics says.
func heap(tb testing.TB, p *proc) float64 {
	tb.Helper()
	body := get(tb, p.debugURL(tb)+"/metrics")
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_alloc_bytes"); ok {
			fields := strings.Fields(rest)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			require.NoError(tb, err)
			return v
		}
	}
	tb.Fatalf("member %s exports no go_memstats_heap_alloc_bytes", p.name)
	return 0
}

// BenchmarkSpreadRounds measures a family of CLUSTER_RATE_BEINGS (300)
// beings, seeded on its root, living against the simulated Brama
// (which answers at once) with the built-in tools only: first in one
// process (`singularity run` with no cluster), then spread over three
// member processes (--cluster-placement being, a real etcd on loopback,
// every step fenced), in the same run. It reports the rounds per second
// of each over CLUSTER_RATE_SECS (10 s) once every being cycled, their
// ratio, and the heap in use per being (each process's
// go_memstats_heap_alloc_bytes at the window's end, summed). Run it
// with -benchtime 1x: each iteration is the whole measurement.
func BenchmarkSpreadRounds(b *testing.B) {
	n, window := rateBeings(b), rateWindow(b)
	for range b.N {
		one := rateWorld(b)
		one.seed(n)
		single := one.startWith(map[string]string{"SINGULARITY_CLUSTER_ETCD": "", "SINGULARITY_CLUSTER_MEMBER": "single", "SINGULARITY_RESUME": "true"})
		oneRate := one.rounds(b, window)
		oneHeap := heap(b, single)
		require.NoError(b, single.cmd.Process.Kill())
		single.wait(b, waitLimit)

		spread := rateWorld(b)
		spread.spreadOut()
		spread.seed(n)
		var members []*proc
		for i := range 3 {
			members = append(members, spread.start(fmt.Sprintf("m%d", i+1)))
		}
		threeRate := spread.rounds(b, window)
		threeHeap := 0.0
		for _, m := range members {
			threeHeap += heap(b, m)
		}
		for _, m := range members {
			require.NoError(b, m.cmd.Process.Kill())
			m.wait(b, waitLimit)
		}
		b.ReportMetric(oneRate, "rounds/s-1-process")
		b.ReportMetric(threeRate, "rounds/s-3-members")
		b.ReportMetric(threeRate/oneRate, "ratio")
		b.ReportMetric(oneHeap/float64(n), "heap-B/being-1-process")
		b.ReportMetric(threeHeap/float64(n), "heap-B/being-3-members")
		b.Logf("%d beings: one process %.0f rounds/s, three members %.0f rounds/s (×%.2f); heap per being %.0f B in one process, %.0f B over three members",
			n, oneRate, threeRate, threeRate/oneRate, oneHeap/float64(n), threeHeap/float64(n))
	}
}
