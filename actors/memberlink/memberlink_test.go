package memberlink

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// shownBy answers as a member named name would: holding with a tree
// naming the asker, or not holding.
func shownBy(name string, holding bool) Shown {
	return func(ctx context.Context, asker string) *clusterpb.FamilyTree {
		if _, ok := ctx.Deadline(); !ok {
			panic("the link called Shown without a deadline")
		}
		if !holding {
			return &clusterpb.FamilyTree{Member: name}
		}
		return &clusterpb.FamilyTree{Member: name, Holding: true, Token: 7, TreeJson: []byte(`{"asked_by":"` + asker + `"}`)}
	}
}

// Within one actor system (the race detector's domain: protoactor-go's
// remote is racy under -race, so two systems meet only in remote_test.go
// and test/cluster).
func TestAskAnswersByWorker(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	_, err := system.Root.SpawnNamed(Props(shownBy("m1", true), nil, 0), Name)
	require.NoError(t, err)

	tree, err := Ask(system, system.ProcessRegistry.Address, "m2", time.Second)
	require.NoError(t, err)
	require.Equal(t, "m1", tree.GetMember())
	require.True(t, tree.GetHolding())
	require.Equal(t, uint64(7), tree.GetToken())
	require.JSONEq(t, `{"asked_by":"m2"}`, string(tree.GetTreeJson()))
}

// An answer that does not come within the deadline is an error naming
// the member's address, not a wait without end.
func TestAskGivesUpAtItsDeadline(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := func(ctx context.Context, _ string) *clusterpb.FamilyTree {
		<-release
		return &clusterpb.FamilyTree{}
	}
	_, err := system.Root.SpawnNamed(Props(slow, nil, time.Minute), Name)
	require.NoError(t, err)

	_, err = Ask(system, system.ProcessRegistry.Address, "m2", 50*time.Millisecond)
	require.ErrorIs(t, err, actor.ErrTimeout)
	require.ErrorContains(t, err, "the member at "+system.ProcessRegistry.Address+" did not answer within 50ms")
}

// A relayed control request reaches the hook whole, with a deadline a
// little within the asker's, and its reply comes back whole: the fund's
// amounts as exact decimals, the reply's flags as the hook set them.
func TestRelayAnswersThroughTheHook(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	got := make(chan control.Request, 1)
	hook := func(ctx context.Context, req control.Request) control.Reply {
		deadline, ok := ctx.Deadline()
		if !ok || time.Until(deadline) > 5*time.Second {
			return control.Reply{Failure: "the hook's deadline is not within the asker's"}
		}
		got <- req
		remaining, err := money.Parse("1.000000000001")
		if err != nil {
			return control.Reply{Failure: err.Error()}
		}
		return control.Reply{Name: "Bo", Key: req.Key, Amount: req.Amount, Remaining: remaining, Duplicate: true}
	}
	_, err := system.Root.SpawnNamed(Props(shownBy("m1", true), hook, 0), Name)
	require.NoError(t, err)

	amount, err := money.Parse("0.123456789012")
	require.NoError(t, err)
	req := control.Request{Op: control.OpFund, Being: "children/b1", Amount: amount, Key: "k-1", Note: "top-up"}
	reply, err := Relay(system, system.ProcessRegistry.Address, req, 5*time.Second)
	require.NoError(t, err)
	require.Empty(t, reply.Failure)
	seen := <-got
	require.Equal(t, "0.123456789012", seen.Amount.String())
	seen.Amount = req.Amount
	require.Equal(t, req, seen)
	require.Equal(t, "Bo", reply.Name)
	require.Equal(t, "0.123456789012", reply.Amount.String())
	require.Equal(t, "1.000000000001", reply.Remaining.String())
	require.True(t, reply.Duplicate)
}

// A request the control protocol refuses never reaches the hook, and a
// link without a hook says it holds no being.
func TestRelayRefusesAndNotHere(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	hook := func(context.Context, control.Request) control.Reply {
		return control.Reply{Failure: "the hook was called"}
	}
	_, err := system.Root.SpawnNamed(Props(shownBy("m1", true), hook, 0), Name)
	require.NoError(t, err)
	bare, err := system.Root.SpawnNamed(Props(shownBy("m2", true), nil, 0), "bare")
	require.NoError(t, err)

	reply, err := Relay(system, system.ProcessRegistry.Address, control.Request{Op: control.OpRelay, Being: ".", Key: "m-1", Text: "hi"}, time.Second)
	require.NoError(t, err)
	require.Equal(t, control.Reply{Refusal: "a relayed message names its sender and its relation, parent or child"}, reply)

	res, err := system.Root.RequestFuture(bare, &clusterpb.RelayRequest{RequestJson: []byte(`{"op":"say","being":".","key":"k","text":"hi"}`), DeadlineMs: 1000}, time.Second).Result()
	require.NoError(t, err)
	require.JSONEq(t, `{"not_here":true}`, string(res.(*clusterpb.RelayReply).GetReplyJson()))
}

// A hook that takes long holds neither the link's mailbox (a tree is
// answered meanwhile) nor the asker past its deadline.
func TestRelayNeverHoldsTheLink(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := func(ctx context.Context, _ control.Request) control.Reply {
		<-release
		return control.Reply{}
	}
	_, err := system.Root.SpawnNamed(Props(shownBy("m1", true), slow, 0), Name)
	require.NoError(t, err)
	at := system.ProcessRegistry.Address

	_, err = Relay(system, at, control.Request{Op: control.OpSay, Being: ".", Key: "k", Text: "hi"}, 50*time.Millisecond)
	require.ErrorIs(t, err, actor.ErrTimeout)
	require.ErrorContains(t, err, "the member at "+at+" did not answer within 50ms")
	tree, err := Ask(system, at, "m2", time.Second)
	require.NoError(t, err)
	require.True(t, tree.GetHolding())
}
