package memberlink

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

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
	_, err := system.Root.SpawnNamed(Props(shownBy("m1", true), 0), Name)
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
	_, err := system.Root.SpawnNamed(Props(slow, time.Minute), Name)
	require.NoError(t, err)

	_, err = Ask(system, system.ProcessRegistry.Address, "m2", 50*time.Millisecond)
	require.ErrorIs(t, err, actor.ErrTimeout)
	require.ErrorContains(t, err, "the member at "+system.ProcessRegistry.Address+" did not answer within 50ms")
}
