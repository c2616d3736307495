package debugtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	beingactor "github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// At is the time of everything WriteBeing writes.
var At = state.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}

// WriteBeing writes the state directory dir of a being named name with
// the starting balance starting, its state changed by edit before it is
// saved, and events in its journal.
func WriteBeing(t testing.TB, dir, name, starting string, edit func(*state.Being), events ...state.Event) {
	t.Helper()
	id := testkit.Identity()
	id.Name = name
	st := beingactor.NewState(id, testkit.USD(starting), "m", At)
	edit(st)
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	require.NoError(t, err)
	j, err := store.OpenJournal(At, 0)
	require.NoError(t, err)
	defer j.Close()
	_, err = j.AppendStep(events)
	require.NoError(t, err)
}
