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
// and the family's money is exact over what is.
func TestFrozenMemberIsFenced(t *testing.T) {
	w := newWorld(t)
	zombie := w.start("m1")
	zombie.await(t, "this member holds the family", waitLimit)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	standby := w.start("m2")
	standby.await(t, "standing by for the family's lock", waitLimit)
	frozenToken := tokens(t, w.stateDir)[1]

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGSTOP))
	frozeAt := time.Now()
	standby.await(t, "this member holds the family", waitLimit)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family goes on on the standby")
	t.Logf("the standby took over %s after the holder froze", time.Since(frozeAt).Round(time.Millisecond))

	// What the frozen member had written, being by being.
	beings := w.check(t)
	frozen := map[string]int{}
	for name, b := range beings {
		frozen[name] = len(holderEvents(t, b.dir, frozenToken))
	}

	require.NoError(t, zombie.cmd.Process.Signal(syscall.SIGCONT))
	zombie.await(t, "writes nothing more", waitLimit)
	require.True(t, zombie.lines.AwaitCount("standing by for the family's lock", 2, waitLimit),
		"the woken member joins again as a standby; stderr:\n%s", zombie.lines.Tail())

	tried := 0
	for name, b := range w.check(t) {
		events := holderEvents(t, b.dir, frozenToken)
		late := events[min(frozen[name], len(events)):]
		tried += len(late)
		_, trust := judge(t, b.dir, b.rec)
		for _, e := range late {
			require.False(t, trust.Trusted(fence.Written{Token: frozenToken, Seq: e.Seq}),
				"%s: the frozen member's event %d, written after the takeover, is trusted", name, e.Seq)
		}
		require.Greater(t, b.rec.Token, frozenToken, "%s: the commit record is the new holder's", name)
	}
	t.Logf("the woken member appended %d journal event(s) after the takeover, none trusted", tried)
	require.Positive(t, tried+zombie.lines.Count("being fenced"), "the woken member tried to go on")

	for _, p := range []*proc{standby, zombie} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, waitLimit), "member %s stops", p.name)
	}
	counted := w.check(t)
	w.deliveries(t)
	remaining, verdict := w.status(t)
	require.Equal(t, "exact", verdict, "status counts no step the woken member wrote")
	for name, b := range counted {
		require.Equal(t, b.st.Budget.Remaining.String(), remaining[name], "status of %s", name)
	}
	// journal prints no step the woken member wrote after the takeover.
	w.requireJournal(t, counted)
}
