package cluster

import (
	"encoding/json"
	"fmt"
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

// allCycledSince is the condition that every being of the family sent a
// completion more than it had in before.
func allCycledSince(before map[string]int) func(map[string]int) bool {
	return func(now map[string]int) bool {
		for _, name := range familyNames {
			if now[name] <= before[name] {
				return false
			}
		}
		return true
	}
}

// failovers is CLUSTER_KILLS, how many holders the failover test kills
// (default 3).
func failovers(t *testing.T) int {
	v := os.Getenv("CLUSTER_KILLS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err)
	require.Positive(t, n)
	return n
}

// TestFailoverAfterSIGKILL: three members share one family; the member
// holding it is SIGKILLed again and again, and each time a survivor takes
// the family over without being asked: every being cycles again within a
// bound of the kill. After each failover the family's files, judged from
// the commit records, explain every being's money exactly with no being
// written by two holders at once, and no tool call reached a Las twice.
// Then the members stop gracefully: the holder hands the family over at
// its beings' round boundary, and the last member stops it.
func TestFailoverAfterSIGKILL(t *testing.T) {
	w := newWorld(t)
	procs := map[string]*proc{}
	next := 0
	startMember := func() *proc {
		next++
		p := w.start(fmt.Sprintf("m%d", next))
		procs[p.name] = p
		return p
	}
	first := startMember()
	first.await(t, "this member holds the family", waitLimit)
	require.True(t, w.seen.until(waitLimit, allCycledSince(nil)), "the family grew to %v", familyNames)
	for range 2 {
		startMember().await(t, "standing by for the family's lock", waitLimit)
	}

	holder := first
	var times []time.Duration
	for kill := range failovers(t) {
		before, _ := w.seen.snapshot()
		require.NoError(t, holder.cmd.Process.Kill())
		killed := time.Now()
		holder.wait(t, waitLimit)
		delete(procs, holder.name)
		require.True(t, w.seen.until(waitLimit, allCycledSince(before)), "kill %d: every being cycles again on a survivor", kill+1)
		took := time.Since(killed)
		times = append(times, took)
		var next *proc
		for _, p := range procs {
			if p.lines.Count("this member holds the family") > 0 {
				require.Nil(t, next, "two members hold the family")
				next = p
			}
		}
		require.NotNil(t, next, "a survivor holds the family")
		t.Logf("kill %d of %s: %s took the family over; every being cycled again %s after the kill", kill+1, holder.name, next.name, took.Round(time.Millisecond))
		beings := w.check(t)
		require.Subset(t, keysOf(beings), familyNames)
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
		require.Len(t, tokens(t, w.stateDir), kill+3, "the root's first state, then one directory per holder")
		holder = next
		startMember().await(t, "standing by for the family's lock", waitLimit)
	}
	slices.Sort(times)
	t.Logf("failover after %d SIGKILLs (lease %s): p50 %s, max %s; %d distinct tool calls delivered once each",
		len(times), lease, times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), w.deliveries(t))
	require.Less(t, times[len(times)-1], 10*time.Second, "the family is back within 10 s of a kill")

	// A graceful stop of the holder hands the family over.
	before, _ := w.seen.snapshot()
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, holder.wait(t, waitLimit))
	delete(procs, holder.name)
	require.True(t, w.seen.until(waitLimit, allCycledSince(before)), "the family goes on after a graceful handover")
	w.check(t)
	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, waitLimit), "member %s stops", p.name)
	}
	beings := w.check(t)
	w.deliveries(t)

	// status counts what the commit records say, and nothing else.
	remaining, verdict := w.status(t)
	require.Equal(t, "exact", verdict)
	require.Len(t, remaining, len(beings))
	for name, b := range beings {
		require.Equal(t, b.st.Budget.Remaining.String(), remaining[name], "status of %s", name)
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
