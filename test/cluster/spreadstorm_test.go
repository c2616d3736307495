package cluster

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpreadStorm is `make cluster-crash`: TestStorm with the beings
// spread over three members. CLUSTER_SPREAD_STORM random blows,
// each a SIGKILL (the member is replaced by a new one) or a SIGSTOP past
// the lease and a SIGCONT (the member wakes, fences itself and joins
// again), at a random member; after each, the blown member's beings are
// held by the others, every being cycles again, and the family's files
// explain every being's money exactly with one writer at a time. It
// runs only when CLUSTER_SPREAD_STORM is set; CLUSTER_SEED picks the
// blows, and CLUSTER_BEINGS seeds a larger family. At the end it counts
// what every member that lived said of lost leases (beyond the SIGSTOPs,
// which lose theirs on purpose) and of Las given up at its restart
// intensity.
func TestSpreadStorm(t *testing.T) {
	blows, rng := stormOf(t, "CLUSTER_SPREAD_STORM", "make cluster-crash")

	w := newWorld(t)
	w.spreadOut()
	if n := beingsWanted(t); n > 0 {
		w.seed(n)
	}
	var members, lived []*proc
	next := 0
	startMember := func() *proc {
		next++
		p := w.start(fmt.Sprintf("m%d", next))
		members = append(members, p)
		lived = append(lived, p)
		p.await(t, places, waitLimit)
		return p
	}
	w.startSpread(t, 3, startMember)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	ids := w.beingIDs(t)

	var kills, stops int
	back := map[string][]time.Duration{}
	for blow := 1; blow <= blows; blow++ {
		requireAlive(t, members, blow)
		p := members[rng.IntN(len(members))]
		held := countOf(w.placement(t, ids, ""), p.name)
		start := time.Now()
		what := "SIGKILL"
		if rng.IntN(5) < 2 {
			what = "SIGSTOP"
			stops++
			gone := w.watchDelete(t, "member/"+p.name)
			again := p.lines.Count(places)
			p.signal(t, syscall.SIGSTOP)
			waitFor(t, gone, "the frozen member's record goes with its lease")
			w.placement(t, ids, p.name)
			from, _ := w.seen.snapshot()
			require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "blow %d: the family goes on without the frozen member", blow)
			if held > 0 {
				back[what] = append(back[what], time.Since(start))
			}
			p.signal(t, syscall.SIGCONT)
			require.True(t, p.lines.AwaitCount(places, again+1, waitLimit),
				"blow %d: the woken member %s joins again; stderr:\n%s", blow, p.name, p.lines.Tail())
		} else {
			kills++
			p.signal(t, syscall.SIGKILL)
			p.wait(t, waitLimit)
			w.placement(t, ids, p.name)
			from, _ := w.seen.snapshot()
			require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "blow %d: the survivors take the beings over", blow)
			if held > 0 {
				back[what] = append(back[what], time.Since(start))
			}
			members = slices.DeleteFunc(members, func(m *proc) bool { return m == p })
			startMember()
		}
		after, _ := w.seen.snapshot()
		require.True(t, w.seen.until(waitLimit, w.allCycledSince(after)), "blow %d: the family cycles", blow)
		w.check(t)
		t.Logf("blow %d: %s of %s (%d beings) in %s", blow, what, p.name, held, time.Since(start).Round(time.Millisecond))
	}
	calls := w.deliveries(t)
	// One at a time: the last stops the family, children first.
	stopInTurn(t, members...)
	beings := w.check(t)
	w.requireStatus(t, beings)
	leases, intensity := 0, 0
	for _, p := range lived {
		leases += p.lines.Count("etcd lease ended")
		intensity += p.lines.Count("restart intensity exceeded")
	}
	t.Logf("spread storm of %d blows (%d SIGKILLs, %d SIGSTOPs): a blown member's beings back after a SIGKILL %s, after a SIGSTOP %s; %d beings exact; %d distinct tool calls delivered once each; %d lease endings said by members (%d SIGSTOPs), %d Las given up at the restart intensity",
		blows, kills, stops, spread(back["SIGKILL"]), spread(back["SIGSTOP"]), len(beings), calls, leases, stops, intensity)
}
