package las

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/world/examplelas"
)

// pairBase and pairMore are the Las actors BenchmarkPairRSS starts first
// and then adds: the marginal figures are the difference over pairMore.
const (
	pairBase = 1
	pairMore = 16
)

// pairWarmCalls is how many echo calls every Las answers before the
// figures are read, so that its heap has gone through its collections.
const pairWarmCalls = 200

// BenchmarkPairRSS measures what one Las costs a family in memory: the
// example Las process (a real child, after pairWarmCalls calls) and the
// Las actor in the host process (docs/las.md; the being's own cost
// without Las is what BenchmarkFamilyScale in test/family measures).
//
// From /proc, after pairBase Las and again after pairMore more:
//   - las-rss-B, las-anon-B, las-file-B: one example Las's VmRSS,
//     RssAnon and RssFile (file: the binary's pages, shared between all
//     example Las processes), averaged;
//   - las-pss-B: its proportional set size, the shared pages divided
//     among the processes that map them;
//   - host-B/las: the host's VmRSS growth per Las actor added (after a
//     GC), which holds the actor, its four goroutines and their buffers;
//   - rss-B/pair: las-rss-B + host-B/las, the resident memory of one
//     Las and its actor as each process reports it;
//   - marginal-B/pair: the growth of the example Las processes' summed
//     PSS per Las added, plus host-B/las: what one more pair costs the
//     machine.
//
// One op is one echo call, round robin over all the Las.
func BenchmarkPairRSS(b *testing.B) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLogger() }))
	defer system.Shutdown()
	var parents, pids []*actor.PID
	defer func() {
		for _, p := range parents {
			_ = system.Root.StopFuture(p).Wait()
		}
	}()
	add := func(n int) {
		for range n {
			cfg := examplelas.Config{}
			props := actor.PropsFromProducer(func() actor.Actor {
				return &testParent{props: Props(baseOptions(b, &cfg)), events: make(chan any, 256)}
			}, actor.WithSupervisor(supervision.ForLas(supervision.LasConfig{Backoff: fastBackoff})))
			parent, err := system.Root.SpawnNamed(props, fmt.Sprintf("being-%d", len(parents)))
			require.NoError(b, err)
			parents = append(parents, parent)
			res, err := system.Root.RequestFuture(parent, whereIsLas{}, 5*time.Second).Result()
			require.NoError(b, err)
			las := res.(*actor.PID)
			cat, err := system.Root.RequestFuture(las, messages.LasCatalogRequest{}, 20*time.Second).Result()
			require.NoError(b, err)
			require.True(b, cat.(messages.LasCatalogResponse).Available)
			pids = append(pids, las)
			for range pairWarmCalls {
				pairCall(b, system, las)
			}
		}
	}
	measure := func() (host uint64, children []procMemory) {
		runtime.GC()
		debug.FreeOSMemory()
		for _, las := range pids {
			res, err := system.Root.RequestFuture(las, messages.DescribeRequest{}, 5*time.Second).Result()
			require.NoError(b, err)
			m, err := readProcMemory(strconv.Itoa(res.(messages.Description).Figures["process_id"].(int)))
			require.NoError(b, err)
			children = append(children, m)
		}
		self, err := readProcMemory("self")
		require.NoError(b, err)
		return self.rss, children
	}

	add(pairBase)
	hostBefore, before := measure()
	add(pairMore)
	hostAfter, after := measure()

	var avg procMemory
	for _, m := range after {
		avg.rss += m.rss / uint64(len(after))
		avg.anon += m.anon / uint64(len(after))
		avg.file += m.file / uint64(len(after))
		avg.pss += m.pss / uint64(len(after))
	}
	host := (float64(hostAfter) - float64(hostBefore)) / pairMore
	pssGrowth := (float64(sumPss(after)) - float64(sumPss(before))) / pairMore

	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		pairCall(b, system, pids[i%len(pids)])
	}
	b.ReportMetric(float64(avg.rss), "las-rss-B")
	b.ReportMetric(float64(avg.anon), "las-anon-B")
	b.ReportMetric(float64(avg.file), "las-file-B")
	b.ReportMetric(float64(avg.pss), "las-pss-B")
	b.ReportMetric(host, "host-B/las")
	b.ReportMetric(float64(avg.rss)+host, "rss-B/pair")
	b.ReportMetric(pssGrowth+host, "marginal-B/pair")
}

func pairCall(b *testing.B, system *actor.ActorSystem, las *actor.PID) {
	req := messages.LasCallRequest{Tool: "echo__echo", Arguments: json.RawMessage(`{"message":"ping"}`), Deadline: time.Now().Add(5 * time.Second)}
	res, err := system.Root.RequestFuture(las, req, 10*time.Second).Result()
	if err != nil || res.(messages.LasCallResponse).Outcome.Status != outcome.Success {
		b.Fatalf("call: %v %v", res, err)
	}
}

// procMemory is a process's resident memory in bytes, from
// /proc/<pid>/status (VmRSS, RssAnon, RssFile) and smaps_rollup (Pss).
type procMemory struct{ rss, anon, file, pss uint64 }

func readProcMemory(pid string) (procMemory, error) {
	var m procMemory
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return m, err
	}
	rollup, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return m, err
	}
	fields := map[string]*uint64{"VmRSS": &m.rss, "RssAnon": &m.anon, "RssFile": &m.file, "Pss": &m.pss}
	for _, text := range [][]byte{status, rollup} {
		sc := bufio.NewScanner(bytes.NewReader(text))
		for sc.Scan() {
			name, rest, ok := strings.Cut(sc.Text(), ":")
			dst := fields[name]
			if !ok || dst == nil {
				continue
			}
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return m, fmt.Errorf("/proc/%s: %s: %w", pid, name, err)
			}
			*dst = kb << 10
		}
	}
	if m.rss == 0 || m.pss == 0 {
		return m, fmt.Errorf("/proc/%s: no VmRSS or Pss", pid)
	}
	return m, nil
}

func sumPss(ms []procMemory) uint64 {
	var s uint64
	for _, m := range ms {
		s += m.pss
	}
	return s
}

func TestReadProcMemory(t *testing.T) {
	m, err := readProcMemory("self")
	require.NoError(t, err)
	require.NotZero(t, m.anon)
	require.LessOrEqual(t, m.anon+m.file, m.rss+1<<20) // RssShmem aside, rss = anon + file
	require.LessOrEqual(t, m.pss, m.rss)
}
