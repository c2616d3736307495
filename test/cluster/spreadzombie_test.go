package cluster

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFrozenSpreadMemberIsFenced is TestFrozenMemberIsFenced with the
// beings spread over two members: the member holding some of them is
// SIGSTOPped past its lease, the other takes them over, and the frozen
// one, woken, finds each of its beings' next steps refused, stops them
// writing nothing more, and joins again, taking its share anew. Not one
// step it wrote after the takeover is trusted, being by being, each by
// its own lock's token.
func TestFrozenSpreadMemberIsFenced(t *testing.T) {
	w := newWorld(t)
	w.spreadOut()
	zombie := w.start("m1")
	zombie.await(t, places, waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	other := w.start("m2")
	other.await(t, places, waitLimit)
	ids := w.beingIDs(t)

	const rounds = 6
	for round := 1; ; round++ {
		if freezeSpread(t, w, ids, zombie, other) > 0 {
			break
		}
		require.Less(t, round, rounds, "in %d rounds no woken member tried to go on", rounds)
		zombie, other = other, zombie
	}
	w.requireWokenLeftOut(t, other, zombie)
}

// freezeSpread SIGSTOPs zombie, once it holds some beings and other the
// rest, until other holds them all and they cycled, then SIGCONTs it and
// waits for it to place beings again, checking that not one step it
// wrote after the takeover is trusted. It returns how often the woken
// member tried to go on.
func freezeSpread(t testing.TB, w *world, ids map[string]string, zombie, other *proc) int {
	t.Helper()
	on := w.placement(t, ids, "")
	frozenToken := map[string]uint64{}
	for name, b := range w.check(t) {
		if on[name] == zombie.name {
			frozenToken[name] = b.rec.Token
		}
	}
	if len(frozenToken) == 0 {
		return 0 // nothing to freeze this round: the roles swap
	}
	fencedBefore := zombie.lines.Count("being fenced")
	stopped := zombie.lines.Count("write nothing more")
	placing := zombie.lines.Count(places)

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGSTOP))
	frozeAt := time.Now()
	w.placement(t, ids, zombie.name)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family goes on on %s", other.name)
	t.Logf("%s took over %d being(s) %s after %s froze", other.name, len(frozenToken), time.Since(frozeAt).Round(time.Millisecond), zombie.name)

	// What the frozen member had written, being by being, counted while
	// it is frozen: it went on writing until the SIGSTOP.
	frozen := map[string]int{}
	for name, b := range w.check(t) {
		if token, ok := frozenToken[name]; ok {
			frozen[name] = len(holderEvents(t, b.dir, token))
		}
	}

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGCONT))
	require.True(t, zombie.lines.AwaitCount(places, placing+1, waitLimit),
		"the woken member joins again; stderr:\n%s", zombie.lines.Tail())
	require.Greater(t, zombie.lines.Count("write nothing more"), stopped, "the woken member says its beings write nothing more")

	tried := 0
	for name, b := range w.check(t) {
		if token, ok := frozenToken[name]; ok {
			tried += requireLateUntrusted(t, name, b, token, frozen[name])
		}
	}
	return woken(t, zombie, tried, fencedBefore)
}
