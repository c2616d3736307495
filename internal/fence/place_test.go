package fence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
)

// TestChildIsRegisteredWithTheStepThatRecordsIt: a child is registered
// exactly when the step that records it commits; a step refused under a
// lost lock registers nothing; an end is written only under the lock.
func TestChildIsRegisteredWithTheStepThatRecordsIt(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := member(t, srv, "fam"), member(t, srv, "fam")
	ctx := ctxFor(t, 10*time.Second)

	parent := lock(t, a, "p")
	c := NewCommitter(parent, NewBatcher(a))
	t.Cleanup(c.batch.Close)
	plain := []state.Event{{Type: state.EventMemoryAdded, Seq: 1}}
	require.NoError(t, c.FenceStep(plain))
	reg, err := b.Registered(ctx)
	require.NoError(t, err)
	assert.Empty(t, reg, "a step without a child registers none")

	kid := state.ChildAdded(state.Child{ID: "kid-1", Name: "Kid"})
	kid.Seq = 2
	require.NoError(t, c.FenceStep([]state.Event{{Type: state.EventToolFinished, Seq: 2}, kid}))
	reg, err = b.Registered(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kid-1": "p"}, reg)
	assert.Equal(t, Record{parent.Token(), 2}, record(t, b, "p"), "the registration came with the commit")

	// The parent's lock goes: a later step is fenced and registers nobody.
	require.NoError(t, parent.Unlock(ctx))
	other := state.ChildAdded(state.Child{ID: "kid-2", Name: "Other"})
	other.Seq = 3
	require.ErrorIs(t, c.FenceStep([]state.Event{other}), ErrFenced)
	reg, err = b.Registered(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kid-1": "p"}, reg, "a refused step registers nothing")

	// An end is written under the being's own lock only.
	held := lock(t, b, "kid-1")
	require.NoError(t, held.End(ctx, state.StatusExhausted))
	require.NoError(t, held.Unlock(ctx))
	require.ErrorIs(t, held.End(ctx, state.StatusFailed), ErrFenced)
	ended, err := a.EndedBeings(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kid-1": state.StatusExhausted}, ended)
}

// TestFundTakesTheEndAway: the commit of a step that funds an ended
// being takes its ended/ mark away in the same transaction; a fund
// refused under a lost lock leaves the mark.
func TestFundTakesTheEndAway(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := member(t, srv, "fam"), member(t, srv, "fam")
	ctx := ctxFor(t, 10*time.Second)

	first := lock(t, a, "kid")
	require.NoError(t, first.End(ctx, state.StatusExhausted))
	require.NoError(t, first.Unlock(ctx))

	stale := lock(t, b, "kid")
	require.NoError(t, stale.Unlock(ctx))
	fund := state.Funded(state.Now(), 1, money.FromInt(1), "k", "")
	fund.Seq = 4
	require.ErrorIs(t, NewCommitter(stale, nil).FenceStep([]state.Event{fund}), ErrFenced)
	ended, err := a.EndedBeings(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kid": state.StatusExhausted}, ended, "a refused fund leaves the end")

	held := lock(t, b, "kid")
	batch := NewBatcher(b)
	t.Cleanup(batch.Close)
	require.NoError(t, NewCommitter(held, batch).FenceStep([]state.Event{fund}))
	ended, err = a.EndedBeings(ctx)
	require.NoError(t, err)
	assert.Empty(t, ended, "the fund's commit took the end away")
	assert.Equal(t, Record{held.Token(), 4}, record(t, a, "kid"))
}
