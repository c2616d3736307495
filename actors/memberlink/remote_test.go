//go:build !race

package memberlink

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
)

// Two members' actor systems, each served by protoactor-go's remote on
// loopback: one asks the other for its tree, and relays a request to it, across
// the wire. Not under
// -race (the remote package races with itself there).
func TestAskAcrossRemote(t *testing.T) {
	holder, asker := actor.NewActorSystem(), actor.NewActorSystem()
	t.Cleanup(holder.Shutdown)
	t.Cleanup(asker.Shutdown)
	said := func(_ context.Context, req control.Request) control.Reply {
		return control.Reply{Name: "Ada", Key: req.Key}
	}
	at, stopHolder, err := Serve(holder, "127.0.0.1:0", shownBy("m1", true), said)
	require.NoError(t, err)
	t.Cleanup(stopHolder)
	_, stopAsker, err := Serve(asker, "127.0.0.1:0", shownBy("m2", false), nil)
	require.NoError(t, err)
	t.Cleanup(stopAsker)
	_, port, err := net.SplitHostPort(at)
	require.NoError(t, err)
	require.NotEqual(t, "0", port, "the address given is the one listened on")

	tree, err := Ask(asker, at, "m2", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "m1", tree.GetMember())
	require.True(t, tree.GetHolding())
	require.JSONEq(t, `{"asked_by":"m2"}`, string(tree.GetTreeJson()))

	// A control request relayed across the wire, and its reply.
	reply, err := Relay(asker, at, control.Request{Op: control.OpSay, Being: ".", Key: "k-2", Text: "hello"}, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, control.Reply{Name: "Ada", Key: "k-2"}, reply)

	// The address is taken now: a second member cannot listen on it.
	third := actor.NewActorSystem()
	t.Cleanup(third.Shutdown)
	_, _, err = Serve(third, at, shownBy("m3", false), nil)
	require.ErrorContains(t, err, "cannot listen on "+at)
}
