package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// familyNames are the beings of the demo world's family once it grew:
// the root, its two children and a grandchild.
var familyNames = []string{rootName, "Bo", "Cy", "Di"}

// allCycledSince is the condition that every being of the family
// (w.names) sent a completion more than it had in before.
func (w *world) allCycledSince(before map[string]int) func(map[string]int) bool {
	return func(now map[string]int) bool {
		for _, name := range w.names {
			if now[name] <= before[name] {
				return false
			}
		}
		return true
	}
}

// stalled fails the test for the beings that did not cycle again since
// before, naming each with its status as committed, and keeps the
// holder's stderr and goroutines.
func (w *world) stalled(t testing.TB, before map[string]int, holder *proc, when string) {
	t.Helper()
	now, _ := w.seen.snapshot()
	beings := w.check(t)
	var missing []string
	for _, name := range w.names {
		if now[name] <= before[name] {
			status := "unknown"
			if b, ok := beings[name]; ok {
				status = fmt.Sprintf("%s, %s left", b.st.Status, b.st.Budget.Remaining)
			}
			missing = append(missing, fmt.Sprintf("%s (%s)", name, status))
		}
	}
	t.Fatalf("%s: %d of %d beings did not cycle again on %s within %s: %v; %s",
		when, len(missing), len(w.names), holder.name, waitLimit, missing, holder.dump(t))
}

// takeover waits for a member of candidates other than gone to log that
// it holds the family once more than it had in took, and returns it. The
// family's completions alone cannot tell: the simulated Brama may still
// answer requests a killed or frozen holder sent before the blow.
func takeover(t testing.TB, candidates []*proc, gone *proc, took map[*proc]int) *proc {
	t.Helper()
	got := make(chan *proc, len(candidates))
	for _, m := range candidates {
		if m == gone {
			continue
		}
		go func() {
			if m.lines.AwaitCount(holds, took[m]+1, waitLimit) {
				got <- m
			}
		}()
	}
	select {
	case m := <-got:
		return m
	case <-time.After(waitLimit):
		t.Fatalf("no member took the family over within %s", waitLimit)
		return nil
	}
}

// holdCounts is how many times each member took the family so far.
func holdCounts(members []*proc) map[*proc]int {
	took := map[*proc]int{}
	for _, m := range members {
		took[m] = m.lines.Count(holds)
	}
	return took
}

// failovers is CLUSTER_KILLS, how many holders the failover test kills
// (default 3).
func failovers(t testing.TB) int { return envCount(t, "CLUSTER_KILLS", 3) }

// envCount is the positive count the environment variable name gives,
// or def when it is not set.
func envCount(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// TestFailoverAfterSIGKILL: three members share one family; the member
// holding it is SIGKILLed again and again, and each time a survivor takes
// the family over without being asked: every being cycles again within a
// bound of the kill. After each failover the family's files, judged from
// the commit records, explain every being's money exactly with no being
// written by two holders at once, and no tool call reached a Las twice.
// Then the members stop gracefully: the holder hands the family over at
// its beings' round boundary, and the last member stops it. With
// CLUSTER_FREEZE set, each blow is a holder whose machine died instead:
// SIGSTOPped, so only its lease ends its hold, and SIGKILLed once a
// survivor holds the family; the times count from the SIGSTOP.
func TestFailoverAfterSIGKILL(t *testing.T) {
	w := newWorld(t)
	if n := beingsWanted(t); n > 0 {
		w.seed(n)
	}
	procs, startMember := w.memberStarter()
	first := startMember()
	first.await(t, "this member holds the family", waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %d beings", len(w.names))
	for range 2 {
		startMember().await(t, "standing by for the family's lock", waitLimit)
	}

	holder := first
	freeze := os.Getenv("CLUSTER_FREEZE") != ""
	var times []time.Duration
	for kill := range failovers(t) {
		survivors := slices.Collect(maps.Values(procs))
		took := holdCounts(survivors)
		killed := time.Now()
		var next *proc
		if freeze {
			// The holder's machine dies: its process stops answering but
			// keeps its connections, so only its lease can end its hold;
			// it is killed once a survivor holds the family.
			require.NoError(t, holder.cmd.Process.Signal(syscall.SIGSTOP))
			next = takeover(t, survivors, holder, took)
			require.NoError(t, holder.cmd.Process.Kill())
			holder.wait(t, waitLimit)
		} else {
			require.NoError(t, holder.cmd.Process.Kill())
			holder.wait(t, waitLimit)
			next = takeover(t, survivors, holder, took)
		}
		delete(procs, holder.name)
		tookOver := time.Since(killed)
		// Counted from the takeover on, so that no answer to the dead
		// holder's last requests counts.
		from, _ := w.seen.snapshot()
		if !w.seen.until(waitLimit, w.allCycledSince(from)) {
			w.stalled(t, from, next, fmt.Sprintf("kill %d", kill+1))
		}
		back := time.Since(killed)
		times = append(times, back)
		for _, p := range survivors {
			if p != next {
				if took[p] != p.lines.Count(holds) {
					t.Fatalf("only %s took the family over, but %s did too; %s: %s\n%s: %s",
						next.name, p.name, p.name, p.dump(t), next.name, next.dump(t))
				}
			}
		}
		blow := "kill"
		if freeze {
			blow = "freeze"
		}
		t.Logf("%s %d of %s: %s took the family over %s after the %s; every being cycled again %s after it",
			blow, kill+1, holder.name, next.name, tookOver.Round(time.Millisecond), blow, back.Round(time.Millisecond))
		beings := w.check(t)
		require.Subset(t, keysOf(beings), w.names)
		// The holder's debug endpoint names it, and so do its metrics.
		base := next.debugURL(t)
		var tree struct {
			Kind   string `json:"kind"`
			Member string `json:"member"`
			Fence  uint64 `json:"fence"`
		}
		require.NoError(t, json.Unmarshal(get(t, base+"/debug/actors"), &tree))
		require.Equal(t, "family", tree.Kind)
		require.Equal(t, next.name, tree.Member, "the family node names its member")
		require.Equal(t, tokens(t, w.stateDir)[kill+2], tree.Fence, "and the token it holds the family under")
		require.Contains(t, string(get(t, base+"/metrics")), `member="`+next.name+`"`)
		w.requireDebugJournal(t, base)
		for _, p := range survivors {
			if p != next && p != holder {
				w.requireStandbyTree(t, p, next)
			}
		}
		require.Len(t, tokens(t, w.stateDir), kill+3, "the root's first state, then one directory per holder")
		holder = next
		startMember().await(t, "standing by for the family's lock", waitLimit)
	}
	slices.Sort(times)
	blow := "SIGKILLs"
	if freeze {
		blow = "SIGSTOPs (then SIGKILLs)"
	}
	t.Logf("failover of a family of %d after %d %s (lease %s): p50 %s, max %s; %d distinct tool calls delivered once each",
		len(w.names), len(times), blow, lease, times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), w.deliveries(t))
	require.Less(t, times[len(times)-1], 10*time.Second, "the family is back within 10 s of a kill")

	// A graceful stop of the holder hands the family over.
	survivors := slices.Collect(maps.Values(procs))
	took := holdCounts(survivors)
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, holder.wait(t, waitLimit))
	delete(procs, holder.name)
	takeover(t, survivors, holder, took)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family goes on after a graceful handover")
	w.check(t)
	w.requireCompacted(t)
	stopInTurn(t, slices.Collect(maps.Values(procs))...)
	beings := w.check(t)
	w.deliveries(t)

	// status counts what the commit records say, and nothing else.
	w.requireStatus(t, beings)
	w.requireJournal(t, beings)
}

// memberStarter is the members of a test by name, and the function
// that starts the next one (m1, m2, …) and adds it.
func (w *world) memberStarter() (map[string]*proc, func() *proc) {
	procs := map[string]*proc{}
	next := 0
	return procs, func() *proc {
		next++
		p := w.start(fmt.Sprintf("m%d", next))
		procs[p.name] = p
		return p
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
