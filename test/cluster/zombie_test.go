package cluster

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/fence"
)

// TestFrozenMemberIsFenced: the holder is SIGSTOPped past its lease; a
// standby takes the family over. Woken by SIGCONT, the frozen member
// goes on where it was (its beings try their next steps), finds its
// lease gone, stops the family writing nothing more, and joins again as
// a standby. Not one step it wrote after the takeover is trusted: every
// line it appended to its own files is left out by the commit records,
// and the family's money is exact over what is. A woken member that
// saw its lease gone before any being stepped proves nothing, so the
// new holder is frozen in turn until a woken member tried.
func TestFrozenMemberIsFenced(t *testing.T) {
	w := newWorld(t)
	zombie := w.start("m1")
	zombie.await(t, "this member holds the family", waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	standby := w.start("m2")
	standby.await(t, "standing by for the family's lock", waitLimit)

	// Whether a woken member gets to a step before it sees its lease
	// gone is a race; the holder is frozen again (the roles swapped)
	// until one tried, each round checked the same way.
	const rounds = 6
	for round := 1; ; round++ {
		tried := freezeAndWake(t, w, zombie, standby)
		if tried > 0 {
			break
		}
		require.Less(t, round, rounds, "in %d rounds no woken member tried to go on", rounds)
		zombie, standby = standby, zombie
	}

	w.requireWokenLeftOut(t, standby, zombie)
}

// requireWokenLeftOut stops the members one at a time, then requires
// that status and journal count no step a woken member wrote after its
// takeover: status's money is the files' as the commit records judge
// them, and journal prints each being's trusted life and nothing else.
func (w *world) requireWokenLeftOut(t *testing.T, members ...*proc) {
	t.Helper()
	stopInTurn(t, members...)
	counted := w.check(t)
	w.deliveries(t)
	w.requireStatus(t, counted)
	w.requireJournal(t, counted)
}

// freezeAndWake SIGSTOPs zombie, the holder, until standby has taken
// the family over and cycled it, then SIGCONTs it and waits for it to
// stand by again, checking that not one step it wrote after the
// takeover is trusted. It returns how often the woken member tried to
// go on: the events it appended after the takeover and the beings the
// fence stopped.
func freezeAndWake(t testing.TB, w *world, zombie, standby *proc) int {
	t.Helper()
	held := tokens(t, w.stateDir)
	frozenToken := held[len(held)-1]
	fencedBefore := zombie.lines.Count("being fenced")
	standingBy := zombie.lines.Count("standing by for the family's lock")
	stopped := zombie.lines.Count("writes nothing more")
	holds := standby.lines.Count("this member holds the family")

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGSTOP))
	frozeAt := time.Now()
	require.True(t, standby.lines.AwaitCount("this member holds the family", holds+1, waitLimit),
		"%s takes the family over; stderr:\n%s", standby.name, standby.lines.Tail())
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family goes on on the standby")
	t.Logf("%s took over %s after %s froze", standby.name, time.Since(frozeAt).Round(time.Millisecond), zombie.name)

	// What the frozen member had written, being by being.
	frozen := map[string]int{}
	for name, b := range w.check(t) {
		frozen[name] = len(holderEvents(t, b.dir, frozenToken))
	}

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGCONT))
	require.True(t, zombie.lines.AwaitCount("standing by for the family's lock", standingBy+1, waitLimit),
		"the woken member joins again as a standby; stderr:\n%s", zombie.lines.Tail())
	require.Greater(t, zombie.lines.Count("writes nothing more"), stopped, "the woken member says it writes nothing more")

	tried := 0
	for name, b := range w.check(t) {
		tried += requireLateUntrusted(t, name, b, frozenToken, frozen[name])
	}
	return woken(t, zombie, tried, fencedBefore)
}

// requireLateUntrusted requires that none of the events the holder of
// token wrote for being b past its first written (those it wrote before
// it froze) is trusted, and that b's commit record is a later holder's;
// it returns how many such late events there were.
func requireLateUntrusted(t testing.TB, name string, b checked, token uint64, written int) int {
	t.Helper()
	events := holderEvents(t, b.dir, token)
	late := events[min(written, len(events)):]
	_, trust := judge(t, b.dir, b.rec)
	for _, e := range late {
		require.False(t, trust.Trusted(fence.Written{Token: token, Seq: e.Seq}),
			"%s: the frozen member's event %d, written after the takeover, is trusted", name, e.Seq)
	}
	require.Greater(t, b.rec.Token, token, "%s: the commit record is a later holder's", name)
	return len(late)
}

// woken logs what the woken zombie tried (tried late events, and the
// beings the fence stopped since fencedBefore) and returns their sum.
func woken(t testing.TB, zombie *proc, tried, fencedBefore int) int {
	t.Helper()
	fenced := zombie.lines.Count("being fenced") - fencedBefore
	t.Logf("woken, %s appended %d journal event(s) after the takeover, none trusted; the fence stopped %d being(s)",
		zombie.name, tried, fenced)
	return tried + fenced
}
