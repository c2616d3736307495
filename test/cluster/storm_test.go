package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
)

// holds is the line a member logs each time it takes the family.
const holds = "this member holds the family"

// places is the line a member of a spread family logs each time it
// begins to place the family's beings.
const places = "this member places the family's beings"

// TestStorm is `make cluster-family-crash`: CLUSTER_STORM random blows
// at the members of a three-member family held by one member at a time
// (--cluster-placement family), each a SIGKILL (the member is
// replaced by a new one) or a SIGSTOP past the lease and a SIGCONT (the
// member wakes as a zombie, fences itself and joins again), at the
// holder or at a standby. After each, the family cycles again and every
// check of TestFailoverAfterSIGKILL holds. It runs only when
// CLUSTER_STORM is set; CLUSTER_SEED picks the blows.
func TestStorm(t *testing.T) {
	blows, rng := stormOf(t, "CLUSTER_STORM", "make cluster-family-crash")

	w := newWorld(t)
	var members []*proc
	next := 0
	startMember := func() *proc {
		next++
		p := w.start(fmt.Sprintf("m%d", next))
		members = append(members, p)
		return p
	}
	first := startMember()
	first.await(t, holds, waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	for range 2 {
		startMember().await(t, "standing by for the family's lock", waitLimit)
	}

	var kills, stops, holderBlows int
	// back is how long the family took to cycle again after each blow
	// at its holder, by the blow.
	back := map[string][]time.Duration{}
	for blow := 1; blow <= blows; blow++ {
		requireAlive(t, members, blow)
		p := members[rng.IntN(len(members))]
		holder := w.holder(t) == p.name
		took := holdCounts(members)
		start := time.Now()
		what := "SIGKILL"
		if rng.IntN(5) < 2 {
			what = "SIGSTOP"
			stops++
			gone := w.watchDelete(t, "member/"+p.name)
			p.signal(t, syscall.SIGSTOP)
			waitFor(t, gone, "the frozen member's record goes with its lease")
			if holder {
				takeover(t, members, p, took)
				from, _ := w.seen.snapshot()
				require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "blow %d: the family goes on without the frozen holder", blow)
				back[what] = append(back[what], time.Since(start))
			}
			rejoined := p.lines.Count("standing by for the family's lock")
			p.signal(t, syscall.SIGCONT)
			require.True(t, p.lines.AwaitCount("standing by for the family's lock", rejoined+1, waitLimit),
				"blow %d: the woken member %s joins again; stderr:\n%s", blow, p.name, p.lines.Tail())
		} else {
			kills++
			p.signal(t, syscall.SIGKILL)
			p.wait(t, waitLimit)
			if holder {
				takeover(t, members, p, took)
				from, _ := w.seen.snapshot()
				require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "blow %d: a survivor takes the family over", blow)
				back[what] = append(back[what], time.Since(start))
			}
			members = slices.DeleteFunc(members, func(m *proc) bool { return m == p })
			startMember().await(t, "standing by for the family's lock", waitLimit)
		}
		if holder {
			holderBlows++
			newHolders := 0
			for _, m := range members {
				if m != p && m.lines.Count(holds) > took[m] {
					newHolders++
				}
			}
			require.Equal(t, 1, newHolders, "blow %d: exactly one member took the family over", blow)
		}
		after, _ := w.seen.snapshot()
		require.True(t, w.seen.until(waitLimit, w.allCycledSince(after)), "blow %d: the family cycles", blow)
		w.check(t)
		t.Logf("blow %d: %s of %s (holder: %v) in %s", blow, what, p.name, holder, time.Since(start).Round(time.Millisecond))
	}
	calls := w.deliveries(t)
	for _, m := range members {
		require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, m := range members {
		require.Equal(t, 0, m.wait(t, waitLimit), "member %s stops", m.name)
	}
	beings := w.check(t)
	w.requireStatus(t, beings)
	t.Logf("storm of %d blows (%d SIGKILLs, %d SIGSTOPs; %d at the holder): the family back after a SIGKILL of its holder %s, after a SIGSTOP of its holder %s; %d beings exact; %d distinct tool calls delivered once each",
		blows, kills, stops, holderBlows, spread(back["SIGKILL"]), spread(back["SIGSTOP"]), len(beings), calls)
}

// stormOf is a storm's number of blows, from the variable env (the test
// is skipped when it is unset), and the random source of its blows,
// seeded by CLUSTER_SEED or the clock (logged, to repeat a storm).
func stormOf(t *testing.T, env, target string) (int, *rand.Rand) {
	blows, _ := strconv.Atoi(os.Getenv(env))
	if blows <= 0 {
		t.Skipf("set %s to the number of blows (%s)", env, target)
	}
	return blows, seeded(t)
}

// seeded is a random source seeded by CLUSTER_SEED, or by the clock
// when it is unset; the seed is logged, so that a run can be repeated.
func seeded(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CLUSTER_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("CLUSTER_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// spread is "p50 <d>, max <d> (n)" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "(none)"
	}
	slices.Sort(ds)
	return fmt.Sprintf("p50 %s, max %s (%d)", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}

// signal sends sig to the member, which must still run.
func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		<-p.exited
		t.Fatalf("member %s cannot be sent %v: it exited by itself (%v); %s", p.name, sig, p.err, p.dump(t))
	}
}

// watchDelete returns a channel closed when the family's key (below its
// prefix) is deleted.
func (w *world) watchDelete(t testing.TB, key string) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	w.watchFirst(t, key, clientv3.EventTypeDelete, func([]byte) { close(done) })
	return done
}

// watchPut returns a channel that gets the value of the first write of
// key (under the family's prefix) after the call.
func (w *world) watchPut(t testing.TB, key string) <-chan string {
	t.Helper()
	put := make(chan string, 1)
	w.watchFirst(t, key, clientv3.EventTypePut, func(value []byte) { put <- string(value) })
	return put
}

// watchFirst watches the family's key from the revision after the call
// and hands seen the value of its first event of type typ, then stops.
func (w *world) watchFirst(t testing.TB, key string, typ mvccpb.Event_EventType, seen func(value []byte)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	full := fence.Root + familyName + "/" + key
	client := w.etcd.Client(t)
	resp, err := client.Get(ctx, full)
	require.NoError(t, err)
	events := client.Watch(ctx, full, clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		for r := range events {
			for _, e := range r.Events {
				if e.Type == typ {
					seen(e.Kv.Value)
					cancel()
					return
				}
			}
		}
	}()
}

func waitFor(t testing.TB, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitLimit):
		t.Fatalf("%s: not within %s", what, waitLimit)
	}
}
