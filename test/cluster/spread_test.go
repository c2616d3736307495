package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
)

// spreadOut makes the world's members place each being on its own, by
// the default placement (--cluster-placement being).
func (w *world) spreadOut() {
	delete(w.env, "SINGULARITY_CLUSTER_PLACEMENT")
	w.spread = true
}

// startSpread starts n members of a spread family with start, each
// placing beings, while the simulated Brama holds its answers, so that
// no being takes a step before the n have joined. The demo's script
// spawns each child in a fixed cycle of its parent, and a member that
// joins is given beings at their next round boundary: a parent handed
// over within its spawning cycle would never spawn that child (its
// next cycle, on the new member, is another). With all n joined before
// the first step, the family only grows, and no member holds more than
// its share.
func (w *world) startSpread(t testing.TB, n int, start func() *proc) []*proc {
	t.Helper()
	held := make(chan struct{})
	w.held.Store(&held)
	defer func() {
		close(held)
		w.held.Store(nil)
	}()
	members := make([]*proc, n)
	for i := range members {
		members[i] = start()
		members[i].await(t, places, waitLimit)
	}
	return members
}

// placedOn is which member holds each being's lock now, by being id:
// the member whose lease wrote the oldest key under the being's lock.
func (w *world) placedOn(t testing.TB) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := w.etcd.Client(t)
	prefix := fence.Root + familyName + "/"
	locks, err := client.Get(ctx, prefix+"lock/", clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	require.NoError(t, err)
	records, err := client.Get(ctx, prefix+"member/", clientv3.WithPrefix())
	require.NoError(t, err)
	byLease := map[string]string{}
	for _, kv := range records.Kvs {
		var info member.Info
		require.NoError(t, json.Unmarshal(kv.Value, &info))
		byLease[info.Lease] = info.Name
	}
	out := map[string]string{}
	for _, kv := range locks.Kvs {
		being, lease, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix+"lock/"), "/")
		if _, seen := out[being]; !seen && byLease[lease] != "" {
			out[being] = byLease[lease]
		}
	}
	return out
}

// beingIDs are the family's beings (as check finds them) by name: their
// ids in etcd.
func (w *world) beingIDs(t testing.TB) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for name, b := range w.check(t) {
		ids[name] = member.BeingID(w.stateDir, b.dir)
	}
	return ids
}

// placement waits until every being of ids is held by a live member
// other than gone, and returns the members by being name.
func (w *world) placement(t testing.TB, ids map[string]string, gone string) map[string]string {
	t.Helper()
	return w.placementWhere(t, ids, gone, func(map[string]string) bool { return true })
}

// balanced waits until every being of ids is held by one of members, each
// holding its share (member.Share), and returns the members by being
// name.
func (w *world) balanced(t testing.TB, ids map[string]string, members []string) map[string]string {
	t.Helper()
	share := member.Share(len(ids), len(members))
	return w.placementWhere(t, ids, "", func(on map[string]string) bool {
		for _, m := range members {
			if countOf(on, m) > share {
				return false
			}
		}
		for _, m := range on {
			if !slices.Contains(members, m) {
				return false
			}
		}
		return true
	})
}

// placementWhere waits until every being of ids is held by a live member
// other than gone and ok holds of the members by being name, and returns
// them.
func (w *world) placementWhere(t testing.TB, ids map[string]string, gone string, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	// Every change of a lock or a member record is a reason to look
	// again.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	client := w.etcd.Client(t)
	changes := client.Watch(ctx, fence.Root+familyName+"/", clientv3.WithPrefix(), clientv3.WithFilterPut())
	placed := client.Watch(ctx, fence.Root+familyName+"/lock/", clientv3.WithPrefix())
	for {
		on := w.placedOn(t)
		byName := map[string]string{}
		for name, id := range ids {
			if m := on[id]; m != "" && m != gone {
				byName[name] = m
			}
		}
		if len(byName) == len(ids) && ok(byName) {
			return byName
		}
		select {
		case <-changes:
		case <-placed:
		case <-ctx.Done():
			t.Fatalf("the beings were not placed as wanted within %s: %d of %d on a live member", waitLimit, len(byName), len(ids))
		}
	}
}

// TestBeingsSpreadOverMembers: with --cluster-placement being, three
// members share the family's beings, each at most its share, so that
// parents and children live on different members. A random member,
// SIGKILLed once each holds its share, has its beings come back on the
// survivors with nothing sent to them, and after each kill the family's
// files explain every being's money exactly with one writer at a time,
// and no tool call reached a Las twice. A graceful stop hands a
// member's beings over, and `status` counts the family exactly at the
// end.
func TestBeingsSpreadOverMembers(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	if n := beingsWanted(t); n > 0 {
		w.seed(n)
	}
	procs, startMember := w.memberStarter()
	w.startSpread(t, 3, startMember)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %d beings", len(w.names))
	ids := w.beingIDs(t)
	require.Len(t, ids, len(w.names))
	on := w.placement(t, ids, "")
	share := member.Share(len(w.names), 3)
	counts := map[string]int{}
	for _, m := range on {
		counts[m]++
	}
	t.Logf("%d beings over 3 members (share %d): %v", len(w.names), share, counts)
	for m, n := range counts {
		require.LessOrEqual(t, n, share, "member %s holds more than its share", m)
	}
	beings := w.check(t)
	crossing := 0
	for name, b := range beings {
		for _, c := range b.st.Mind.Children {
			if on[c.Name] != on[name] {
				crossing++
			}
		}
	}
	require.Positive(t, crossing, "a child lives on another member than its parent: %v", on)
	for _, p := range procs {
		w.requireWholeFamily(t, p, on, beings)
	}

	var times []time.Duration
	rng := seeded(t)
	for kill := range failovers(t) {
		// A random member of the three dies once each holds its share
		// (the member started after the last kill has taken its own).
		members := slices.Sorted(maps.Keys(procs))
		on := w.balanced(t, ids, members)
		victim := members[rng.IntN(len(members))]
		dead := procs[victim]
		moved := countOf(on, victim)
		killed := time.Now()
		require.NoError(t, dead.cmd.Process.Kill())
		dead.wait(t, waitLimit)
		delete(procs, victim)
		w.placement(t, ids, victim)
		from, _ := w.seen.snapshot()
		if !w.seen.until(waitLimit, w.allCycledSince(from)) {
			w.stalled(t, from, procs[slices.Sorted(maps.Keys(procs))[0]], fmt.Sprintf("kill %d", kill+1))
		}
		back := time.Since(killed)
		times = append(times, back)
		t.Logf("kill %d of %s (%d beings): every being cycled again %s after it", kill+1, victim, moved, back.Round(time.Millisecond))
		w.check(t)
		startMember().await(t, places, waitLimit)
	}
	slices.Sort(times)
	t.Logf("failover of a family of %d spread over 3 members after %d SIGKILLs (lease %s): p50 %s, max %s; %d distinct tool calls delivered once each",
		len(w.names), len(times), lease, times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), w.deliveries(t))
	require.Less(t, times[len(times)-1], 10*time.Second, "the beings are back within 10 s of a kill")

	// A graceful stop hands the member's beings over.
	names := slices.Sorted(maps.Keys(procs))
	leaving := procs[names[0]]
	require.NoError(t, leaving.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, leaving.wait(t, waitLimit))
	delete(procs, leaving.name)
	w.placement(t, ids, leaving.name)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family goes on after a graceful handover")
	stopInTurn(t, slices.Collect(maps.Values(procs))...)
	beings = w.check(t)
	w.deliveries(t)
	w.requireStatus(t, beings)
}

// countOf is how many beings of on member m holds.
func countOf(on map[string]string, m string) int {
	n := 0
	for _, held := range on {
		if held == m {
			n++
		}
	}
	return n
}

// lastStop is the time of the being's last stopped event in its
// trusted life, and its status; ok is false for a being that never
// booted (stopped before its boot step, it wrote nothing).
func lastStop(t testing.TB, b checked) (at time.Time, status string, ok bool) {
	t.Helper()
	_, life, err := fence.Counted(b.dir, b.rec)
	require.NoError(t, err)
	for i := len(life) - 1; i >= 0; i-- {
		if life[i].Type == state.EventStopped {
			return life[i].At.Time, life[i].Status, true
		}
	}
	require.Empty(t, life, "being %s lived and never stopped", b.st.Identity.Name)
	return time.Time{}, "", false
}

// TestSpreadFamilyEndsChildrenFirst: the root of a family spread over
// three members runs out of money. Its children, on every member, stop
// for good before it does (and theirs before them), each end is
// recorded, the family's end is recorded, and every member exits 0.
func TestSpreadFamilyEndsChildrenFirst(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	w.seedRoot = "0.003"
	w.seed(len(familyNames) + 8)
	// The three join before any being takes a step (startSpread): a
	// family this poor may end before a late member takes a being.
	started := 0
	members := w.startSpread(t, 3, func() *proc {
		started++
		return w.start(fmt.Sprintf("m%d", started))
	})
	for _, m := range members {
		require.Equal(t, 0, m.wait(t, 2*waitLimit), "member %s exits 0 once the family ended; stderr:\n%s", m.name, m.lines.Tail())
	}
	holding := 0
	for _, m := range members {
		if m.lines.Count("this member holds a being") > 0 {
			holding++
		}
	}
	require.GreaterOrEqual(t, holding, 2, "the beings were spread over the members")
	beings := w.check(t)
	_, rootStatus, ok := lastStop(t, beings[rootName])
	require.True(t, ok)
	require.Equal(t, state.StatusExhausted, rootStatus)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ended, err := w.etcd.Client(t).Get(ctx, fence.Root+familyName+"/ended/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	require.EqualValues(t, len(beings)-1, ended.Count, "every child's end is recorded")
	ordered := 0
	for name, b := range beings {
		parentAt, _, _ := lastStop(t, b)
		for _, c := range b.st.Mind.Children {
			child, ok := beings[c.Name]
			require.True(t, ok, "child %s of %s", c.Name, name)
			childAt, status, booted := lastStop(t, child)
			if !booted {
				continue
			}
			require.Contains(t, []string{state.StatusStopped, state.StatusExhausted}, status, "child %s", c.Name)
			require.False(t, childAt.After(parentAt), "%s stopped after its parent %s", c.Name, name)
			ordered++
		}
	}
	require.Positive(t, ordered, "children that lived stopped before their parents")
	t.Logf("%d beings on %d members; %d children stopped before their parents", len(beings), holding, ordered)
	remaining, verdict := w.status(t)
	require.Equal(t, "exact", verdict)
	require.Len(t, remaining, len(beings))
}

// TestSpreadFamilyStopsChildrenFirstWhenEveryMemberStops: the three
// members of a spread family are sent SIGTERM at once. Nobody stays to
// take their beings, so the family stops: every child, wherever it
// runs, stops before its parent, nothing is recorded as ended, every
// member exits 0 with the run summary of the beings it held, and a
// member started again resumes the whole family.
func TestSpreadFamilyStopsChildrenFirstWhenEveryMemberStops(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	w.seed(len(familyNames) + 8)
	procs, startMember := w.memberStarter()
	w.startSpread(t, 3, startMember)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %d beings", len(w.names))
	ids := w.beingIDs(t)
	members := slices.Sorted(maps.Keys(procs))
	on := w.balanced(t, ids, members)

	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for name, p := range procs {
		require.Equal(t, 0, p.wait(t, waitLimit), "member %s exits 0; stderr:\n%s", p.name, p.lines.Tail())
		delete(procs, name)
		// Each member ends with the run summary of the beings it held.
		ended := summaryOf(t, p)
		var held []string
		for being, m := range on {
			if m == name {
				held = append(held, being)
			}
		}
		require.ElementsMatch(t, held, slices.Collect(maps.Keys(ended)), "member %s's summary", name)
		t.Logf("member %s ended with the summary of the %d beings it held: %v", name, len(ended), ended)
		for being, said := range ended {
			require.Regexp(t, `^stopped, \d+ cycles, spent \S+, earned \S+, remaining \S+ USD$`, said, "%s on %s", being, name)
		}
	}
	beings := w.check(t)
	ordered, crossing := 0, 0
	for name, b := range beings {
		parentAt, status, ok := lastStop(t, b)
		require.True(t, ok, "%s stopped", name)
		require.Equal(t, state.StatusStopped, status, "%s", name)
		for _, c := range b.st.Mind.Children {
			childAt, _, booted := lastStop(t, beings[c.Name])
			if !booted {
				continue
			}
			require.False(t, childAt.After(parentAt), "%s stopped after its parent %s", c.Name, name)
			ordered++
			if on[c.Name] != on[name] {
				crossing++
			}
		}
	}
	require.Positive(t, crossing, "a child on another member than its parent stopped first: %v", on)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ended, err := w.etcd.Client(t).Get(ctx, fence.Root+familyName+"/ended", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	require.Zero(t, ended.Count, "a family stopped by its members has not ended")
	t.Logf("%d beings on 3 members stopped at once; %d children stopped before their parents, %d of them on another member", len(beings), ordered, crossing)

	from, _ := w.seen.snapshot()
	startMember().await(t, places, waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family resumes on a member started again")
	stopInTurn(t, slices.Collect(maps.Values(procs))...)
}

// TestSpreadBeingThatCannotLoadIsHeldBack: a child whose first state
// cannot be read is let go by the member that took it, and taken again
// only after a wait that doubles with each failure (member.Retries),
// not at the next look; the rest of the family lives on.
func TestSpreadBeingThatCannotLoadIsHeldBack(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	w.seed(len(familyNames) + 2)
	broken, err := filepath.Glob(filepath.Join(w.stateDir, state.ChildrenDir, "*", "state.json"))
	require.NoError(t, err)
	require.NotEmpty(t, broken)
	st, err := state.Load(filepath.Dir(broken[0]))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(broken[0], []byte("{"), 0o600))

	m := w.start("m1")
	const failed = "a being cannot be activated"
	require.True(t, m.lines.AwaitCount(failed, 3, waitLimit), "three tries of the broken being; %s", m.lines.Tail())
	var waits []time.Duration
	var at []time.Time
	for _, line := range m.lines.Lines() {
		if !strings.Contains(line, failed) {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		wait, err := time.ParseDuration(fields["wait"])
		require.NoError(t, err, line)
		when, err := time.Parse(time.RFC3339Nano, fields["time"])
		require.NoError(t, err, line)
		waits, at = append(waits, wait), append(at, when)
	}
	require.Equal(t, []time.Duration{lease, 2 * lease, 4 * lease}, waits[:3], "the waits double from the lease")
	for i := 1; i < len(at); i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), waits[i-1], "try %d came before the wait after try %d was over", i+1, i)
	}
	from, _ := w.seen.snapshot()
	w.names = slices.DeleteFunc(w.names, func(name string) bool { return name == st.Identity.Name })
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the rest of the family lives on")
	stopInTurn(t, m)
}

// requireWholeFamily asks p's debug endpoint for the actor tree and
// requires that it shows the whole spread family: every being, nested
// under its parent, labelled with the member that runs it (on, by
// name), and the family's ledger exact. It also requires p's metrics to
// carry its member label. beings are the family as check judged it.
func (w *world) requireWholeFamily(t testing.TB, p *proc, on map[string]string, beings map[string]checked) {
	t.Helper()
	type node struct {
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		Member   string `json:"member"`
		Ledger   string `json:"family_ledger"`
		Children []node `json:"children"`
	}
	base := p.debugURL(t)
	var tree node
	raw := get(t, base+"/debug/actors")
	require.NoError(t, json.Unmarshal(raw, &tree), "member %s served %.200q", p.name, raw)
	require.Equal(t, "family", tree.Kind)
	require.Equal(t, "exact", tree.Ledger, "member %s: the family ledger of the whole family", p.name)
	shown := map[string]string{}
	parentOf := map[string]string{}
	var walk func(n node, parent string)
	walk = func(n node, parent string) {
		if n.Kind == "being" {
			shown[n.Name] = n.Member
			parentOf[n.Name] = parent
			parent = n.Name
		}
		for _, c := range n.Children {
			walk(c, parent)
		}
	}
	walk(tree, "")
	require.Equal(t, on, shown, "member %s shows every being with the member that runs it", p.name)
	for name, b := range beings {
		for _, c := range b.st.Mind.Children {
			require.Equal(t, name, parentOf[c.Name], "member %s nests %s under its parent", p.name, c.Name)
		}
	}
	require.Contains(t, string(get(t, base+"/metrics")), `member="`+p.name+`"`)
}
