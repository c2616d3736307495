package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// TestSimultaneousFreshStartsOneLives: two `run`s started at once on one
// new state directory, released together by a barrier, pair after pair:
// in every pair exactly one lives, its journal whole, and the other is
// refused with one sentence, exit 4: the directory is in use
// (docs/state.md#one-runtime-per-directory), or, when the live one's
// first state.json is already there at its boot check, the state
// already exists (docs/state.md#boot-gates). The lock is taken before
// anything in the directory is touched, so the refused one cannot remove
// the temporary file of the live one's first save.
func TestSimultaneousFreshStartsOneLives(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(10, 5))
	const pairs = 32
	inUse := 0
	for i := range pairs {
		w.stateDir = filepath.Join(w.dir, fmt.Sprintf("fresh-%02d", i))
		w.env["SINGULARITY_STATE_DIR"] = w.stateDir
		both := w.startTogether("run")

		// The first to end must be the refused one, the other lives on.
		var refused, live *process
		select {
		case err := <-both[0].done:
			both[0].done <- err
			refused, live = both[0], both[1]
		case err := <-both[1].done:
			both[1].done <- err
			refused, live = both[1], both[0]
		case <-time.After(waitLimit):
			t.Fatalf("pair %d: neither start was refused within %v", i, waitLimit)
		}
		r := refused.wait(waitLimit)
		require.Equal(t, 4, r.code, "pair %d: %s", i, r.stderr)
		require.Contains(t, []string{
			"singularity: state: state directory " + w.stateDir + " is in use by another runtime",
			"singularity: state: state already exists at " + filepath.Join(w.stateDir, state.StateFile) + "; use --resume or a new directory",
		}, r.errorLine(), "pair %d", i)
		if strings.HasSuffix(r.errorLine(), "in use by another runtime") {
			inUse++
		}
		w.waitLive(live, fmt.Sprintf("pair %d", i), cyclesStarted(2))
		live.signal(os.Interrupt)
		lived := live.wait(waitLimit)
		require.Equal(t, 0, lived.code, "pair %d: %s", i, lived.stderr)
		events := w.journal()
		for j, e := range events {
			require.Equal(t, uint64(j+1), e.Seq, "pair %d: every seq once, in order", i)
		}
		require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, events), "pair %d", i)
	}
	t.Logf("%d of %d refused as in use, the others as existing state", inUse, pairs)
}

// waitLive polls the journal of the process p, a live run, until cond
// holds; p ending first, or the wait passing waitLimit, fails the test
// with p's stderr.
func (w *world) waitLive(p *process, what string, cond func([]state.Event) bool) {
	w.t.Helper()
	path := testkit.JournalPath(w.stateDir)
	end := time.After(waitLimit)
	tick := time.NewTicker(10 * time.Millisecond) // polling another process's file
	defer tick.Stop()
	for {
		if events, err := readJournalLoose(path); err == nil && cond(events) {
			return
		}
		select {
		case err := <-p.done:
			w.t.Fatalf("%s: the live one ended (%v):\n%s", what, err, p.stderr.String())
		case <-end:
			w.t.Fatalf("%s: the journal did not show it within %v:\n%s", what, waitLimit, p.stderr.String())
		case <-tick.C:
		}
	}
}

// startTogether starts two runs of the binary with args, released at
// once by a barrier: each waits on it in its own goroutine and starts
// its process when it opens.
func (w *world) startTogether(args ...string) [2]*process {
	w.t.Helper()
	both := [2]*process{w.prepare(args...), w.prepare(args...)}
	barrier := make(chan struct{})
	var started sync.WaitGroup
	errs := make([]error, len(both))
	for i, p := range both {
		started.Add(1)
		go func() {
			defer started.Done()
			<-barrier
			errs[i] = p.cmd.Start()
		}()
	}
	close(barrier)
	started.Wait()
	for i, p := range both {
		require.NoError(w.t, errs[i])
		p.started()
	}
	return both
}

// TestLockedFreshDirectoryIsLeftUntouched: a fresh start on a new state
// directory another runtime holds is refused before it touches anything
// there, the other's temporary save file included.
func TestLockedFreshDirectoryIsLeftUntouched(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(10, 5))
	require.NoError(t, state.MakeDir(w.stateDir))
	other, err := state.LockDir(w.stateDir) // the other runtime, saving its first state.json
	require.NoError(t, err)
	defer other.Unlock()
	temp := filepath.Join(w.stateDir, "."+state.StateFile+".123.tmp")
	require.NoError(t, os.WriteFile(temp, []byte("{}"), state.FileMode))
	before := testkit.Snapshot(t, w.stateDir)

	for _, command := range []string{"run", "once"} {
		r := w.run(command)
		assert.Equal(t, 4, r.code, "%s: %s", command, r.stderr)
		assert.Equal(t, "singularity: state: state directory "+w.stateDir+" is in use by another runtime", r.errorLine(), command)
		assert.Equal(t, before, testkit.Snapshot(t, w.stateDir), "%s: nothing was touched", command)
	}
	assert.Empty(t, w.brama.Completions(), "no completion was asked")
}
