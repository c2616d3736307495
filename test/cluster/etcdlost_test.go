package cluster

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEtcdLostMidRun: etcd is stopped while a family lives on two
// members; the holder's next commit gets no answer, so its family stops,
// writing nothing more, and both members wait for etcd. When etcd comes
// back (same data), they join again, one of them takes the family and
// every being cycles again, its money exact over what was committed.
func TestEtcdLostMidRun(t *testing.T) {
	w := newWorld(t)
	first := w.start("m1")
	first.await(t, holds, waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	second := w.start("m2")
	second.await(t, "standing by for the family's lock", waitLimit)

	lostAt := time.Now()
	w.etcd.Stop()
	first.await(t, "writes nothing more", waitLimit)
	t.Logf("the holder stopped its family %s after etcd was told to stop", time.Since(lostAt).Round(time.Millisecond))
	for _, p := range []*proc{first, second} {
		p.await(t, "waiting for it to join the family again", waitLimit)
	}
	require.Zero(t, first.lines.Count("etcd answers again"), "no member joins while etcd is away")

	before, _ := w.seen.snapshot()
	w.etcd.Restart()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(before)), "the family lives again once etcd is back")
	for _, p := range []*proc{first, second} {
		p.await(t, "etcd answers again", waitLimit)
	}
	require.Equal(t, 2, first.lines.Count(holds)+second.lines.Count(holds), "the family was held once more after etcd came back")
	w.check(t)

	for _, p := range []*proc{first, second} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range []*proc{first, second} {
		require.Equal(t, 0, p.wait(t, waitLimit), "member %s stops", p.name)
	}
	w.check(t)
	w.deliveries(t)
}

// TestSpreadEtcdLostMidRun is TestEtcdLostMidRun with the beings spread
// over the two members: each member's next commit gets no answer, so
// each stops its beings, writing nothing more, and waits for etcd; once
// it is back both join again, the beings are placed anew and every one
// cycles again, its money exact over what was committed.
func TestSpreadEtcdLostMidRun(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	first := w.start("m1")
	first.await(t, places, waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	second := w.start("m2")
	second.await(t, places, waitLimit)
	ids := w.beingIDs(t)
	// m2 takes its share once m1 has given it back.
	on := w.balanced(t, ids, []string{"m1", "m2"})
	require.Positive(t, countOf(on, "m1"))
	require.Positive(t, countOf(on, "m2"))

	lostAt := time.Now()
	w.etcd.Stop()
	for _, p := range []*proc{first, second} {
		p.await(t, "stop at once and write nothing more", waitLimit)
	}
	t.Logf("both members stopped their beings within %s of etcd's stop", time.Since(lostAt).Round(time.Millisecond))
	for _, p := range []*proc{first, second} {
		p.await(t, "waiting for it to join the family again", waitLimit)
	}

	before, _ := w.seen.snapshot()
	w.etcd.Restart()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(before)), "the family lives again once etcd is back")
	for _, p := range []*proc{first, second} {
		p.await(t, "etcd answers again", waitLimit)
		require.True(t, p.lines.AwaitCount(places, 2, waitLimit), "member %s places beings again", p.name)
	}
	w.placement(t, ids, "")
	w.check(t)
	stopInTurn(t, first, second)
	w.check(t)
	w.deliveries(t)
}
