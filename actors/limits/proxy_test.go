//go:build !race

package limits

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// served is an actor system served by protoactor-go's remote on a free
// loopback port; it returns the system and its address.
func served(t *testing.T) (*actor.ActorSystem, string) {
	t.Helper()
	system := newSystem(t)
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false) })
	return system, system.ProcessRegistry.Address
}

// TestProxyAsksTheFamilysLimiterOnAnotherMember: two members' actor
// systems on loopback; the family's one limiter runs on the first, and
// the second member's beings are admitted through its proxy, the money
// crossing as exact decimal strings. A limiter that cannot be found
// admits nothing, and the being is told to ask again in a second. Not
// under -race (protoactor-go's remote races with itself there).
func TestProxyAsksTheFamilysLimiterOnAnotherMember(t *testing.T) {
	holder, at := served(t)
	limit := testkit.USD("0.01")
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	_, err := holder.Root.SpawnNamed(Props(&limit, func() time.Time { return t0 }), Name)
	require.NoError(t, err)

	other, _ := served(t)
	located := func(context.Context) (string, error) { return at, nil }
	proxy := other.Root.Spawn(ProxyProps(other, located, 5*time.Second))
	m := testkit.USD

	first := admit(t, other, proxy, messages.SpendRequest{Being: "a", Amount: m("0.006")})
	require.True(t, first.Admitted)
	refused := admit(t, other, proxy, messages.SpendRequest{Being: "b", Amount: m("0.006")})
	require.False(t, refused.Admitted, "0.012 in the hour is past the family's 0.01")
	require.Positive(t, refused.RetryAfter)
	// The first cost less than reserved: the second fits now. The
	// settlement is sent, not asked, so the admission is asked until it
	// has landed (each ask is answered within the deadline).
	other.Root.Send(proxy, messages.SpendSettled{Ticket: first.Ticket, Amount: m("0.001")})
	deadline := time.Now().Add(10 * time.Second)
	for {
		again := admit(t, other, proxy, messages.SpendRequest{Being: "b", Amount: m("0.006")})
		if again.Admitted {
			break
		}
		require.True(t, time.Now().Before(deadline), "the settlement never reached the limiter")
	}
	limitOfB := m("0.002")
	own := admit(t, other, proxy, messages.SpendRequest{Being: "b", Amount: m("0.001"), BeingLimit: &limitOfB})
	require.False(t, own.Admitted, "a being's own limit crosses too: b has 0.006 in the hour")

	lost := other.Root.Spawn(ProxyProps(other, func(context.Context) (string, error) { return "", errors.New("no member holds the limiter") }, time.Second))
	nobody := admit(t, other, lost, messages.SpendRequest{Being: "a", Amount: m("0.001")})
	require.Equal(t, messages.SpendResponse{RetryAfter: time.Second}, nobody)
}
