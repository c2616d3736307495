package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// seedEndowment is what the root granted each seeded child.
const seedEndowment = "2"

// beingsWanted is CLUSTER_BEINGS, the size of the family the failover
// test runs (default 0: the demo world's family of 4 alone).
func beingsWanted(t testing.TB) int {
	v := os.Getenv("CLUSTER_BEINGS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err)
	require.Greater(t, n, len(familyNames), "CLUSTER_BEINGS counts the demo family's %d beings", len(familyNames))
	return n
}

// seed writes the family's root before any member starts, with as many
// funded children as make the family n beings once the demo world's
// own three have been spawned. The root's journal holds each child's
// grant of seedEndowment and its record, past the root's checkpoint;
// each child has its own state and an empty journal, and is a being the
// simulated Brama drives like any other: living, calling tools and
// earning. The first holder finds the root written and loads the family
// from it, as a member that joins a family does.
func (w *world) seed(n int) {
	t := w.t
	t.Helper()
	at := state.Now()
	grant := testkit.USD(seedEndowment)
	if w.seedGrant != "" {
		grant = testkit.USD(w.seedGrant)
	}
	root := testkit.Identity()
	var steps []state.Event
	granted := money.Zero
	for i := range n - len(familyNames) {
		c := state.Child{ID: uuid.NewString(), Name: fmt.Sprintf("S%03d", i), Ticker: fmt.Sprintf("S%03d", i),
			Specialty: root.Specialty, CreatedAt: at, Status: state.StatusRunning, Endowment: &grant}
		c.StateDir = state.ChildRecordDir(c.ID)
		id := root
		id.Name, id.Ticker = c.Name, c.Ticker
		dir := filepath.Join(w.stateDir, c.StateDir)
		create(t, dir, being.NewState(id, grant, "any", at), nil)
		remember(t, dir, seedMemories(t, c.Name, at))
		steps = append(steps, state.EndowmentGranted(c, grant), state.ChildAdded(c))
		w.names = append(w.names, c.Name)
		granted = granted.Add(grant)
	}
	// The root was given what it granted on top of the demo world's
	// starting balance (or w.seedRoot).
	rootBalance := testkit.USD("1")
	if w.seedRoot != "" {
		rootBalance = testkit.USD(w.seedRoot)
	}
	create(t, w.stateDir, being.NewState(root, rootBalance.Add(granted), "any", at), steps)
	if w.spread {
		// Members that place each being on its own place registered
		// children: the root's records, as its commit would register them.
		client := w.etcd.Client(t)
		for _, e := range steps {
			if e.Type == state.EventChildAdded {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := client.Put(ctx, fence.Root+familyName+"/being/"+e.Child.ID, member.RootBeing)
				cancel()
				require.NoError(t, err)
			}
		}
	}
}

// seedMemories is what a seeded child remembers from the start:
// CLUSTER_SEED_MEMORIES memories (default none) of the kind and length
// the simulated Brama has a being remember each cycle, so that a short
// failover run meets minds as full as a long one's (state.MaxMemories
// fills a mind). They are journalled past the child's first state, as
// a being's memories are, so that its first holder's checkpoint holds
// them and its own state.json stays its small first one.
func seedMemories(t testing.TB, name string, at state.Time) []state.Memory {
	v := os.Getenv("CLUSTER_SEED_MEMORIES")
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "CLUSTER_SEED_MEMORIES")
	require.True(t, n >= 0 && n <= state.MaxMemories, "CLUSTER_SEED_MEMORIES is 0 to %d", state.MaxMemories)
	out := make([]state.Memory, n)
	for i := range out {
		out[i] = state.Memory{ID: uuid.NewString(), Kind: "observation", CreatedAt: at,
			Text: fmt.Sprintf("Cycle %d: %s surveyed 7 available tools and planned the next useful action.", i+1, name)}
	}
	return out
}

// remember appends memories to the journal of the being in dir, as one
// step.
func remember(t testing.TB, dir string, memories []state.Memory) {
	t.Helper()
	if len(memories) == 0 {
		return
	}
	store, err := state.Open(dir)
	require.NoError(t, err)
	j, err := store.OpenJournal(state.Now(), 0)
	require.NoError(t, err)
	events := make([]state.Event, len(memories))
	for i, m := range memories {
		events[i] = state.MemoryAdded(m)
	}
	_, err = j.AppendStep(events)
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

// create writes a being's first state and its journal in dir: the
// events of steps, one step each, past the state.
func create(t testing.TB, dir string, st *state.Being, steps []state.Event) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	store, err := state.Open(dir)
	require.NoError(t, err)
	require.NoError(t, store.Create(st))
	j, err := store.OpenJournal(st.StartedAt, 0)
	require.NoError(t, err)
	for _, e := range steps {
		_, err := j.AppendStep([]state.Event{e})
		require.NoError(t, err)
	}
	require.NoError(t, j.Close())
}
