package cluster

import (
	"maps"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterDemo is `make cluster-demo`: the demo world's family on
// three members, its holder killed midway, the family back on a survivor
// with its ledger exact, told step by step. It runs only when
// CLUSTER_DEMO is set.
func TestClusterDemo(t *testing.T) {
	if os.Getenv("CLUSTER_DEMO") == "" {
		t.Skip("set CLUSTER_DEMO=1 (make cluster-demo)")
	}
	w := newWorld(t)
	t.Logf("etcd on %v; the shared state root is %s", w.etcd.Endpoints(), w.stateDir)
	procs := map[string]*proc{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		procs[name] = w.start(name)
		if name == "alpha" {
			procs[name].await(t, holds, waitLimit)
		} else {
			procs[name].await(t, "standing by for the family's lock", waitLimit)
		}
	}
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew")
	holder := procs[w.holder(t)]
	t.Logf("three members joined: %s holds the family, the others stand by; the family is %v", holder.name, familyNames)
	before, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool { return now[rootName] >= before[rootName]+10 }))
	t.Logf("the family as its commit records count it:\n%s", w.statusTable(t))

	t.Logf("SIGKILL %s, the holder, midway", holder.name)
	delete(procs, holder.name)
	survivors := []*proc{procs["alpha"], procs["beta"], procs["gamma"]}
	survivors = slices.DeleteFunc(survivors, func(p *proc) bool { return p == nil })
	took := holdCounts(survivors)
	killed := time.Now()
	require.NoError(t, holder.cmd.Process.Kill())
	holder.wait(t, waitLimit)
	takeover(t, survivors, holder, took)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)))
	t.Logf("%s took the family over: every being cycled again %s after the kill", w.holder(t), time.Since(killed).Round(time.Millisecond))
	for _, b := range w.check(t) {
		t.Logf("  %s: %s USD remaining, exact over its %d trusted cycles", b.st.Identity.Name, b.st.Budget.Remaining, b.st.Cycle)
	}
	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range procs {
		require.Equal(t, 0, p.wait(t, waitLimit))
	}
	t.Logf("both survivors stopped; the family as its commit records count it:\n%s", w.statusTable(t))
	w.deliveries(t)
}

// statusTable is `singularity status` of the family, counted by its
// commit records, as an operator sees it.
func (w *world) statusTable(t testing.TB) string {
	t.Helper()
	return string(w.runStatus(t))
}

// TestClusterDemoSpread is the second half of `make cluster-demo`: the
// same family with its beings spread over the three members
// (--cluster-placement being), the member holding the most beings
// killed midway, its beings back on the two others with the family's
// ledger exact. It runs only when CLUSTER_DEMO is set.
func TestClusterDemoSpread(t *testing.T) {
	if os.Getenv("CLUSTER_DEMO") == "" {
		t.Skip("set CLUSTER_DEMO=1 (make cluster-demo)")
	}
	w := newWorld(t)
	w.spreadOut()
	t.Logf("etcd on %v; the shared state root is %s; each being placed on its own", w.etcd.Endpoints(), w.stateDir)
	procs := map[string]*proc{}
	names := []string{"alpha", "beta", "gamma"}
	w.startSpread(t, len(names), func() *proc {
		name := names[len(procs)]
		procs[name] = w.start(name)
		return procs[name]
	})
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew")
	ids := w.beingIDs(t)
	on := w.placement(t, ids, "")
	t.Logf("three members joined and share the family's beings: %v", on)
	before, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, func(now map[string]int) bool { return now[rootName] >= before[rootName]+10 }))
	t.Logf("the family as its commit records count it:\n%s", w.statusTable(t))

	victim := ""
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		if victim == "" || countOf(on, name) > countOf(on, victim) {
			victim = name
		}
	}
	t.Logf("SIGKILL %s midway, which runs %d of the beings", victim, countOf(on, victim))
	killed := time.Now()
	require.NoError(t, procs[victim].cmd.Process.Kill())
	procs[victim].wait(t, waitLimit)
	delete(procs, victim)
	on = w.placement(t, ids, victim)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)))
	t.Logf("the survivors took its beings: %v; every being cycled again %s after the kill", on, time.Since(killed).Round(time.Millisecond))
	for _, b := range w.check(t) {
		t.Logf("  %s on %s: %s USD remaining, exact over its %d trusted cycles", b.st.Identity.Name, on[b.st.Identity.Name], b.st.Budget.Remaining, b.st.Cycle)
	}
	stopInTurn(t, slices.Collect(maps.Values(procs))...)
	t.Logf("both survivors stopped in turn, the last one children first; the family as its commit records count it:\n%s", w.statusTable(t))
	w.deliveries(t)
}
