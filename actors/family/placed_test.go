package family_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// next waits for the next event of type T, skipping others.
func next[T any](t *testing.T, events <-chan any) T {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if v, ok := ev.(T); ok {
				return v
			}
		case <-deadline:
			var zero T
			t.Fatalf("no %T within 30 s", zero)
			return zero
		}
	}
}

// TestPlacedFamily: a family that runs one member's part of a family
// spread over members starts no root of its own; it runs the beings it
// is asked to activate, with their own names, stops one it is asked to
// release and reports it, hands a relative's message to a being it runs
// (and answers not here for one it does not), has a being that stops for good wait until its
// member says its children ended, and ends once its last being has
// stopped.
func TestPlacedFamily(t *testing.T) {
	root := t.TempDir()
	id := testkit.Identity()
	// The root has a child on record: Bo, activated here too.
	_, _, _, err := state.Boot(root, false, id, func() (*state.Being, error) {
		b := being.NewState(id, testkit.USD("1"), "test-model", state.Now())
		b.Mind.Children = []state.Child{{ID: "bo", Name: "Bo", StateDir: state.ChildRecordDir("bo"), Status: state.StatusRunning}}
		return b, nil
	})
	require.NoError(t, err)
	childID := id
	childID.Name = "Bo"
	child := filepath.Join(root, state.ChildRecordDir("bo"))
	require.NoError(t, state.MakeDir(filepath.Join(root, "children")))
	_, _, _, err = state.Boot(child, false, childID, func() (*state.Being, error) {
		return being.NewState(childID, testkit.USD("0.5"), "test-model", state.Now()), nil
	})
	require.NoError(t, err)

	system := quietSystem(t)
	listener, events, stopListener := family.Listen(system)
	t.Cleanup(stopListener)
	pid, err := system.Root.SpawnNamed(family.Props(family.Options{
		Gateway: gateway(t, func(*bramatest.Request) bramatest.Reply {
			return bramatest.TextReply("ok", bramatest.Usage(10, 1))
		}),
		Root: being.Options{
			StateDir: root, Identity: id, Mode: being.Run,
			Model: "test-model", StartingBalance: testkit.USD("1"), Workspace: t.TempDir(),
			MaxToolRounds: 2, ContextMessages: 20, CycleInterval: time.Hour, ShutdownGrace: time.Second,
		},
		Listener: listener,
		Placed:   true,
	}), "family")
	require.NoError(t, err)

	describe := func() messages.Description {
		res, err := system.Root.RequestFuture(pid, messages.DescribeRequest{}, 5*time.Second).Result()
		require.NoError(t, err)
		return res.(messages.Description)
	}
	require.Len(t, describe().Children, 1, "a placed family runs its gateway and no root of its own")

	system.Root.Send(pid, family.Activate{Dir: root, Placement: spreadAlone{}})
	system.Root.Send(pid, family.Activate{Dir: child, Name: "Bo", Ticker: childID.Ticker, Specialty: childID.Specialty, Placement: spreadAlone{}})
	require.Len(t, describe().Children, 3, "the gateway and the two beings activated")

	// A relative's message goes through the family to the being it
	// runs; one to a being it does not run is answered not here.
	relay := func(dir string) any {
		msg := state.InMessage{ID: "m-1", From: id.AgentID, Name: id.Name, Relation: "parent", Text: "hello"}
		res, err := system.Root.RequestFuture(pid, messages.RelayMessage{Dir: dir, Request: messages.MessageRequest{Message: msg}}, 10*time.Second).Result()
		require.NoError(t, err)
		return res
	}
	require.Equal(t, messages.MessageResponse{Name: "Bo"}, relay(child))
	require.Equal(t, messages.MessageResponse{Name: "Bo", Duplicate: true}, relay(child), "an id is taken once")
	require.Equal(t, messages.MessageNotHere{}, relay(filepath.Join(root, state.ChildRecordDir("cy"))))

	system.Root.Send(pid, family.Release{Dir: child})
	released := next[messages.BeingReleased](t, events)
	require.Equal(t, child, released.Dir)
	require.NoError(t, released.Err)
	require.Equal(t, state.StatusStopped, released.Status)

	// The root stops for good: it asks for its children to stop first,
	// and waits until told they ended.
	system.Root.Send(pid, family.Release{Dir: root, ForGood: true})
	asked := next[messages.SubtreeStopping](t, events)
	require.Equal(t, root, asked.Dir)
	tree := describe()
	require.Len(t, tree.Children, 2, "the root waits for its children")
	res, err := system.Root.RequestFuture(tree.Children[1], messages.DescribeRequest{}, 5*time.Second).Result()
	require.NoError(t, err)
	require.Equal(t, state.StatusStopping, res.(messages.Description).Status)
	system.Root.Send(pid, family.SubtreeDone{Dir: root})
	released = next[messages.BeingReleased](t, events)
	require.Equal(t, root, released.Dir)
	require.Equal(t, state.StatusStopped, released.Status)

	system.Root.Send(pid, messages.ShutdownFamily{})
	require.Equal(t, messages.FamilyStopped{Status: state.StatusStopped}, next[messages.FamilyStopped](t, events))
}

// spreadAlone places a being of a spread family on its own files,
// unfenced: the family's part of the placement, without etcd.
type spreadAlone struct{ being.Alone }

func (spreadAlone) ChildrenElsewhere() bool { return true }

// TestPlacedFamilyRelaysElsewhere: a relative's message for a being the
// placed family does not run goes to Options.Relay, whose answer the
// sender gets.
func TestPlacedFamilyRelaysElsewhere(t *testing.T) {
	system := quietSystem(t)
	asked := make(chan string, 1)
	pid, err := system.Root.SpawnNamed(family.Props(family.Options{
		Gateway: gateway(t, func(*bramatest.Request) bramatest.Reply { return bramatest.TextReply("ok", bramatest.Usage(1, 1)) }),
		Root:    being.Options{StateDir: t.TempDir(), Identity: testkit.Identity()},
		Placed:  true,
		Relay: func(dir string, req messages.MessageRequest, _ time.Duration) any {
			asked <- dir + " " + req.Message.ID
			return messages.MessageResponse{Name: "Cy"}
		},
	}), "family")
	require.NoError(t, err)
	req := messages.RelayMessage{Dir: "/shared/children/cy", Request: messages.MessageRequest{Message: state.InMessage{ID: "m-2", From: "agent", Relation: "parent", Text: "hi"}}}
	res, err := system.Root.RequestFuture(pid, req, 10*time.Second).Result()
	require.NoError(t, err)
	require.Equal(t, messages.MessageResponse{Name: "Cy"}, res)
	require.Equal(t, "/shared/children/cy m-2", <-asked)
}
