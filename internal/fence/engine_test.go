package fence

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

// being writes a fresh being's directory and opens its engine, inline,
// with fence; it is closed when the test ends.
func being(t testing.TB, fence durable.Fence) (*durable.Engine, string) {
	t.Helper()
	dir := testkit.BootedDir(t)
	e, _, err := durable.Open(dir, durable.Config{Inline: true, Fence: fence,
		AfterFunc: func(_ time.Duration, _ func()) func() bool { return func() bool { return true } }})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e, dir
}

// TestFencedEngineStepsAndTheTrustedJournal: a being's engine with a
// fence commits a step only once etcd accepted it; after the lock is
// lost the step is appended but fenced, and the journal read with
// the commit record trusts only what was committed.
func TestFencedEngineStepsAndTheTrustedJournal(t *testing.T) {
	srv := etcdtest.Start(t)
	s := member(t, srv, "fam")
	l := lock(t, s, "ada")
	e, dir := being(t, NewCommitter(l, nil))
	at := state.Now()

	out := e.Step(1, []state.Event{state.Started(at), state.Warning(at, 0, "one")}, at, 0)
	require.IsType(t, durable.Committed{}, out[0])
	assert.Equal(t, Record{l.Token(), 2}, record(t, s, "ada"))

	require.NoError(t, l.Unlock(ctxFor(t, 5*time.Second)))
	out = e.Step(2, []state.Event{state.Warning(at, 0, "two")}, at, 0)
	f, ok := out[0].(durable.Fenced)
	require.True(t, ok, "%#v", out)
	assert.ErrorIs(t, f.Err, ErrFenced)
	assert.Equal(t, Record{l.Token(), 2}, record(t, s, "ada"))

	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	require.Len(t, events, 3, "the fenced step is in the journal")
	written := make([]Written, len(events))
	for i, ev := range events {
		written[i] = Written{Token: l.Token(), Seq: ev.Seq}
	}
	token, seq, err := s.Committed(ctxFor(t, 5*time.Second), "ada")
	require.NoError(t, err)
	trust, err := TrustJournal(written, Record{token, seq})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), trust.Through, "the fenced step is not trusted")
	assert.Equal(t, 1, trust.Untrusted)
}
