package being_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/limits"
	identitypkg "github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestFamilySpendLimit: ten beings cycle against a zero-latency gateway
// under a family limit of 0.01 USD per rolling hour until they have been
// served forty completions, many hours' worth of the limit
// (docs/money.md#spend-limits). One limiter admits every reservation, so
// the debits of all ten in any 60-minute window never exceed the limit
// plus one reservation; the beings that had to wait journaled it, and
// spending went on hour after hour.
func TestFamilySpendLimit(t *testing.T) {
	t.Parallel()
	const beings = 10
	// The test ends on a count of completions, not on an instant: the
	// FastClock runs every wait at once, so waits of several beings asked
	// at one instant add up, and how much simulated time passes per
	// completion depends on the interleaving.
	const served = 40
	limit := testkit.USD("0.01")
	srv := newBrama(t)
	var count sync.Mutex
	completions := 0
	enough := make(chan struct{})
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		count.Lock()
		if completions++; completions == served {
			close(enough)
		}
		count.Unlock()
		return bramatest.TextReply("nothing to do", bramatest.Usage(1000, 0)) // 0.001 each
	})
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := testkit.NewFastClock(start)

	client, err := brama.NewClient(brama.ClientConfig{BaseURL: srv.URL, Secret: identitypkg.NewSecret([]byte(testSecret)), Timeout: waitLimit})
	require.NoError(t, err)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(system.Shutdown)
	gateway, err := system.Root.SpawnNamed(brama.Props(brama.GatewayConfig{Client: client, Temperature: 0.2, ShutdownGrace: time.Second, Logger: quiet}), "brama")
	require.NoError(t, err)
	limiter, err := system.Root.SpawnNamed(limits.Props(&limit, clock.Now), limits.Name)
	require.NoError(t, err)

	stopped := make(chan messages.BeingStopped, beings)
	var dirs []string
	parent := actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			for i := range beings {
				opts := options(t, being.Run)
				opts.Identity.Name = fmt.Sprintf("B%d", i)
				opts.Gateway = gateway
				opts.SpendLimiter = limiter
				opts.Pricing.InputPerMillion = testkit.USD("1")
				opts.CycleInterval = time.Minute
				opts.Clock = clock
				_, _, _, err := state.Boot(opts.StateDir, false, opts.Identity, func() (*state.Being, error) {
					return being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Time{Time: start}), nil
				})
				require.NoError(t, err)
				dirs = append(dirs, opts.StateDir)
				_, err = ctx.SpawnNamed(being.Props(opts), opts.Identity.Name)
				require.NoError(t, err)
			}
		case messages.StopBeing:
			for _, pid := range ctx.Children() {
				ctx.Send(pid, msg)
			}
		case messages.BeingStopped:
			stopped <- msg
		}
	})
	pid, err := system.Root.SpawnNamed(parent, "family")
	require.NoError(t, err)

	select {
	case <-enough:
	case <-time.After(waitLimit):
		count.Lock()
		defer count.Unlock()
		t.Fatalf("spending stopped: %d completions of %d by %v simulated", completions, served, clock.Now().Sub(start))
	}
	system.Root.Send(pid, messages.StopBeing{})
	for range beings {
		select {
		case <-stopped:
		case <-time.After(waitLimit):
			t.Fatal("the beings did not stop in time")
		}
	}

	type debit struct {
		at     time.Time
		amount money.Amount
	}
	var debits []debit
	waits := 0
	for _, dir := range dirs {
		events, err := state.ReadAll(dir)
		require.NoError(t, err)
		st, err := state.Load(dir)
		require.NoError(t, err)
		require.NoError(t, testkit.CheckInvariant(st.Budget, events))
		for _, e := range events {
			switch {
			case e.Type == state.EventCostDebited:
				debits = append(debits, debit{e.At.Time, e.Amount})
			case e.Type == state.EventWarning && len(e.Message) > 20 && e.Message[:20] == "spend limit reached;":
				waits++
			}
		}
	}
	slices.SortFunc(debits, func(a, b debit) int { return a.at.Compare(b.at) })
	// A reservation here is at most the request body in bytes at 1 USD
	// per million, with the body bound's allowance.
	largest := 0
	for _, r := range srv.Completions() {
		largest = max(largest, len(r.Body))
	}
	reservation := money.FromInt(int64(largest + 4096)).QuoUp(money.FromInt(1_000_000))
	most := money.Zero
	for i := range debits {
		sum := money.Zero
		for j := i; j >= 0 && debits[j].at.After(debits[i].at.Add(-time.Hour)); j-- {
			sum = sum.Add(debits[j].amount)
		}
		if sum.Cmp(most) > 0 {
			most = sum
		}
	}
	t.Logf("%d debits over %v simulated by %d beings; the most debited in one hour %s (limit %s, a reservation at most %s); %d waits journaled",
		len(debits), clock.Now().Sub(start).Round(time.Minute), beings, most, limit, reservation, waits)
	require.LessOrEqual(t, most.Cmp(limit.Add(reservation)), 0, "the family limit held in every 60-minute window")
	require.Positive(t, waits, "beings waited for the limit")
	// Every completion served was debited: a stop lets the completion in
	// flight settle. Forty debits of 0.001 need at least three 60-minute
	// windows when none holds more than the limit plus a reservation.
	require.GreaterOrEqual(t, len(debits), served)
	require.Len(t, debits, len(srv.Completions()), "every completion served was debited")
	require.Greater(t, debits[len(debits)-1].at.Sub(debits[0].at), 2*time.Hour, "spending went on hour after hour")
}

// TestThrottledBeing: a being over its own spend limit waits for the
// window to make room (docs/money.md#spend-limits): its debug status is
// throttled, the wait is journaled once however often the limiter is
// asked again, and once the hour has passed the round goes on.
func TestThrottledBeing(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("resting", bramatest.Usage(1000, 0)) // 0.001
	})
	clock := testkit.NewStepClock()
	var mu sync.Mutex
	limiterNow := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return limiterNow }
	opts := options(t, being.Run)
	opts.Clock = clock
	opts.Pricing.InputPerMillion = testkit.USD("1")
	own := testkit.USD("0.002") // below one reservation: one completion an hour
	opts.SpendLimit = &own
	h := start(t, srv, opts, func(fo *family.Options) { fo.SpendLimits, fo.Now = true, now })

	require.NoError(t, h.reportFor(1).Err, "the first completion fits an empty window")
	// The second cycle's reservation does not fit: a retry timer.
	retry := clock.Next(t, waitLimit)
	assert.Equal(t, time.Hour, retry.After.Round(time.Minute), "room comes when the first cost leaves the window")
	root := h.system.NewLocalPID("family/" + family.RootName)
	describe := func() messages.Description {
		res, err := h.system.Root.RequestFuture(root, messages.DescribeRequest{}, waitLimit).Result()
		require.NoError(t, err)
		return res.(messages.Description)
	}
	assert.Equal(t, being.StatusThrottled, describe().Status)
	// Asked again too early (the limiter's clock has not moved): still
	// throttled, no second warning.
	retry.Fire()
	retry = clock.Next(t, waitLimit)
	assert.Equal(t, being.StatusThrottled, describe().Status)
	mu.Lock()
	limiterNow = limiterNow.Add(time.Hour + time.Second)
	mu.Unlock()
	retry.Fire()
	require.NoError(t, h.reportFor(2).Err, "the second completion once the hour passed")
	// No status is asked now: cycle 3 may already be throttled by cycle
	// 2's cost, as it should be.
	h.shutdown()

	events := h.journal()
	// Cycle 3 may have begun its own wait before the stop: count cycle 2's.
	assert.Equal(t, 1, testkit.CountWhere(events, func(e state.Event) bool {
		return e.Type == state.EventWarning && e.Cycle == 2 && strings.HasPrefix(e.Message, "spend limit reached; waiting ")
	}), "the wait is journaled once: %v", warnings(events))
	assert.Contains(t, warnings(events), "spend limit reached; waiting 3600 s")
	assert.Len(t, srv.Completions(), 2, "cycle 3 waits too")
}
