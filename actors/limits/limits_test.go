package limits

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

func newSystem(tb testing.TB) *actor.ActorSystem {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	tb.Cleanup(system.Shutdown)
	return system
}

func admit(tb testing.TB, system *actor.ActorSystem, pid *actor.PID, req messages.SpendRequest) messages.SpendResponse {
	tb.Helper()
	res, err := system.Root.RequestFuture(pid, req, 5*time.Second).Result()
	require.NoError(tb, err)
	return res.(messages.SpendResponse)
}

func TestLimiterActor(t *testing.T) {
	system := newSystem(t)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	limit := testkit.USD("0.01")
	pid := system.Root.Spawn(Props(&limit, clock))
	m := testkit.USD

	a := admit(t, system, pid, messages.SpendRequest{Being: "a", Amount: m("0.006")})
	require.True(t, a.Admitted)
	refused := admit(t, system, pid, messages.SpendRequest{Being: "b", Amount: m("0.006")})
	require.False(t, refused.Admitted)
	require.Equal(t, time.Hour, refused.RetryAfter, "measured on the limiter's clock")

	system.Root.Send(pid, messages.SpendSettled{Ticket: a.Ticket, Amount: m("0.001")})
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	require.True(t, admit(t, system, pid, messages.SpendRequest{Being: "b", Amount: m("0.006")}).Admitted, "the settled cost left room")

	res, err := system.Root.RequestFuture(pid, messages.DescribeRequest{}, 5*time.Second).Result()
	require.NoError(t, err)
	d := res.(messages.Description)
	require.Equal(t, "limits", d.Kind)
	require.Equal(t, "0.007", d.Figures["spent_last_hour"])
	require.Equal(t, "0.01", d.Figures["family_limit_per_hour"])
	require.EqualValues(t, 1, d.Figures["refused"])
}

// BenchmarkAdmit is the family limiter's admission latency: one
// SpendRequest asked and answered, then settled, as a being does for every
// completion when a spend limit is set.
func BenchmarkAdmit(b *testing.B) {
	system := newSystem(b)
	limit := testkit.USD("1000000")
	pid := system.Root.Spawn(Props(&limit, nil))
	req := messages.SpendRequest{Being: "a", Amount: testkit.USD("0.004")}
	cost := testkit.USD("0.001")
	for b.Loop() {
		res, err := system.Root.RequestFuture(pid, req, 5*time.Second).Result()
		if err != nil {
			b.Fatal(err)
		}
		system.Root.Send(pid, messages.SpendSettled{Ticket: res.(messages.SpendResponse).Ticket, Amount: cost})
	}
}
