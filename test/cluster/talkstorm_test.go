package cluster

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// talkKills is CLUSTER_TALK_KILLS, the SIGKILLs of
// TestTalkAndFundThroughKills (2 in the normal suite; `make cluster-talk`
// runs 10).
func talkKills(t testing.TB) int { return envCount(t, "CLUSTER_TALK_KILLS", 2) }

// stormFund is one `singularity fund` of the talk storm: its being and
// key, and whether its command acknowledged it.
type stormFund struct {
	being, key string
	acked      bool
}

// fundAmount is what each fund of the talk storm adds.
const fundAmount = "0.01"

// TestTalkAndFundThroughKills (`make cluster-talk`): a family spread
// over three members with the family tools, every being messaging its
// relative every cycle, across members as the placement falls,
// while the operator funds a random being every quarter second under a
// fresh key, and CLUSTER_TALK_KILLS random members are SIGKILLed, each
// replaced by a new one. A fund whose command failed (its member died
// under it) is given again under the same key once the kills are over,
// as an operator would. Then the talking stops, every being cycles
// again, every outbox drains (a message whose receiver's member died is
// sent again after its backoff), and the members stop in turn.
//
// Every fund acknowledged is applied exactly once, to its being; every
// message sent is received exactly once, by the being it was sent to,
// and journaled delivered once by its sender; no outbox is left; and
// the family's ledger is exact with the funds in it.
func TestTalkAndFundThroughKills(t *testing.T) {
	kills := talkKills(t)
	w := newWorld(t)
	w.spreadOut()
	w.env["SINGULARITY_FAMILY_TOOLS"] = "1"
	w.talking.Store(true)
	procs, startMember := w.memberStarter()
	w.startSpread(t, 3, startMember)
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "the family grew to %v", familyNames)
	ids := w.beingIDs(t)

	rng := seeded(t)
	stopFunding := w.fundAtRandom(t, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	var times []time.Duration
	for kill := range kills {
		members := slices.Sorted(maps.Keys(procs))
		w.balanced(t, ids, members)
		victim := members[rng.IntN(len(members))]
		dead := procs[victim]
		killed := time.Now()
		require.NoError(t, dead.cmd.Process.Kill())
		dead.wait(t, waitLimit)
		delete(procs, victim)
		w.placement(t, ids, victim)
		from, _ := w.seen.snapshot()
		require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "kill %d: the survivors take the beings over", kill+1)
		times = append(times, time.Since(killed))
		t.Logf("kill %d of %s: every being cycled again %s after it", kill+1, victim, times[kill].Round(time.Millisecond))
		startMember().await(t, places, waitLimit)
	}
	given := stopFunding()
	retried := 0
	for i := range given {
		if given[i].acked {
			continue
		}
		out, err := w.operate(t, "fund", "--being", given[i].being, fundAmount, "--key", given[i].key)
		require.NoError(t, err, "the fund %s given again: %s", given[i].key, errText(err))
		require.Contains(t, out, "(key "+given[i].key+")")
		given[i].acked = true
		retried++
	}

	w.talking.Store(false)
	from, _ := w.seen.snapshot()
	require.True(t, w.seen.until(waitLimit, w.allCycledSince(from)), "the family cycles once the talking stops")
	// A message whose receiver's member died under it is sent again after
	// a backoff of up to a minute.
	w.awaitDrained(t, 2*waitLimit)
	stopInTurn(t, slices.Collect(maps.Values(procs))...)

	beings := w.check(t)
	applied := map[string][]string{} // fund key → the beings whose journal applied it
	type sent struct{ from, to string }
	sends := map[string]sent{}
	received := map[string][]string{}
	delivered := map[string]int{}
	byID := map[string]string{}
	for name, b := range beings {
		byID[member.BeingID(w.stateDir, b.dir)] = name
	}
	for name, b := range beings {
		life, _ := judge(t, b.dir, b.rec)
		for _, e := range life {
			switch e.Type {
			case state.EventFunded:
				applied[e.Key] = append(applied[e.Key], name)
			case state.EventMessageSent:
				sends[e.ID] = sent{from: name, to: e.To}
			case state.EventMessageReceived:
				received[e.ID] = append(received[e.ID], name)
			case state.EventMessageDelivered:
				delivered[e.ID]++
			}
		}
		assert.Empty(t, b.st.Outbox, "%s's outbox drained", name)
	}
	for _, f := range given {
		assert.Equal(t, []string{f.being}, applied[f.key], "fund %s applied once, to %s", f.key, f.being)
	}
	assert.Len(t, applied, len(given), "no fund applied that was not given")
	require.NotEmpty(t, sends, "the relatives talked")
	for id, s := range sends {
		to := byID[s.to]
		if to == "" {
			to = rootName // a child's parent is the root, whose id is the agent id
		}
		assert.Equal(t, []string{to}, received[id], "%s's message %s received once, by %s", s.from, id, to)
		assert.Equal(t, 1, delivered[id], "%s journaled %s delivered once", s.from, id)
	}
	assert.Len(t, received, len(sends), "no message received that was not sent")

	funded, ledger := w.funded(t)
	want := testkit.USD(fundAmount).Mul(testkit.USD(strconv.Itoa(len(given))))
	got, err := money.Parse(funded)
	require.NoError(t, err)
	assert.True(t, want.Equal(got), "the family was funded %s, the acknowledged funds sum to %s", funded, want)
	assert.Equal(t, "exact", ledger)
	t.Logf("talk storm of %d SIGKILLs over 3 members: every being back %s; %d funds applied once each (%d given again after their member died); %d messages between relatives received once each",
		kills, spread(times), len(given), retried, len(sends))
}

// awaitDrained waits until every message the family's committed lives
// hold as sent is journaled delivered by its sender, reading each
// being's commit record, then the journals of its holdings as the
// members write them (an event a holder wrote but never committed is no
// message sent: the next holder leaves it out).
func (w *world) awaitDrained(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		undelivered := map[string]string{} // id → what the sender's journal says of it
		for dirs := []string{w.stateDir}; len(dirs) > 0; dirs = dirs[1:] {
			rec := w.record(t, member.BeingID(w.stateDir, dirs[0]))
			life, _ := judge(t, dirs[0], rec)
			for _, e := range life {
				switch e.Type {
				case state.EventMessageSent:
					undelivered[e.ID] = fmt.Sprintf("%s (seq %d) to %s: %q", dirs[0], e.Seq, e.To, e.Text)
				case state.EventMessageDelivered:
					delete(undelivered, e.ID)
				}
			}
			children, err := filepath.Glob(filepath.Join(dirs[0], "children", "*"))
			require.NoError(t, err)
			dirs = append(dirs, children...)
		}
		if len(undelivered) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "messages still undelivered after %s: %v", limit, undelivered)
		time.Sleep(50 * time.Millisecond) // polling other processes' files
	}
}

// fundAtRandom funds a random being of the family at once, then every
// quarter second, under a fresh key each time, until the returned stop
// is called, which returns every fund given, acknowledged or not.
func (w *world) fundAtRandom(t testing.TB, rng *rand.Rand) (stop func() []stormFund) {
	var (
		mu    sync.Mutex
		given []stormFund
	)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond) // the operator's pace, not a wait for anything
		defer tick.Stop()
		for i := 0; ; i++ {
			f := stormFund{being: familyNames[rng.IntN(len(familyNames))], key: fmt.Sprintf("storm-%d", i)}
			_, err := w.operate(t, "fund", "--being", f.being, fundAmount, "--key", f.key)
			f.acked = err == nil
			mu.Lock()
			given = append(given, f)
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []stormFund {
		close(quit)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return given
	}
}
