package e2e_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// TestSecondRuntimeIsRefused: while `run --resume` lives in a state
// directory, a second `run --resume` and a `once --resume` on it are
// refused with one sentence and exit 4 (docs/state.md#one-runtime-per-directory);
// the first runtime goes on, and its journal has every seq once, in order,
// with the ledger exact.
func TestSecondRuntimeIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(10, 5))
	require.Equal(t, 0, w.run("once").code)

	first := w.start("run", "--resume")
	w.waitJournal(waitLimit, "two more cycles", cyclesStarted(3))
	refusal := "singularity: state: state directory " + w.stateDir + " is in use by another runtime"
	for _, args := range [][]string{{"run", "--resume"}, {"once", "--resume"}} {
		r := w.run(args...)
		assert.Equal(t, 4, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, refusal, r.errorLine(), "%v", args)
	}
	w.waitJournal(waitLimit, "the first runtime lives on", cyclesStarted(5))
	first.signal(os.Interrupt)
	require.Equal(t, 0, first.wait(waitLimit).code)

	events := w.journal()
	for i, e := range events {
		require.Equal(t, uint64(i+1), e.Seq, "every seq once, in order")
	}
	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestLockedDirectoryIsLeftUntouched: a runtime refused for a directory
// another one holds writes nothing there.
func TestLockedDirectoryIsLeftUntouched(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(10, 5))
	require.Equal(t, 0, w.run("once").code)
	other, err := state.LockDir(w.stateDir) // the other runtime
	require.NoError(t, err)
	defer other.Unlock()
	before := testkit.Snapshot(t, w.stateDir)
	completions := len(w.brama.Completions())

	r := w.run("run", "--resume")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Equal(t, "singularity: state: state directory "+w.stateDir+" is in use by another runtime", r.errorLine())
	assert.Equal(t, before, testkit.Snapshot(t, w.stateDir), "nothing was written")
	assert.Len(t, w.brama.Completions(), completions, "no completion was asked")
}
