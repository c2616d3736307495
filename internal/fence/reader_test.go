package fence

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// TestReaderIsCounted: for random lives of holders, zombies, torn lines
// and segments, TrustedPast is the trusted life Counted gives, cut past
// any seq and to any newest count, and Newest is Counted's being.
func TestReaderIsCounted(t *testing.T) {
	eachRandomLife(t, 9, 100, func(t *testing.T, dir string, holders []holder, rec Record) {
		being, life, cerr := Counted(dir, rec)
		newest, nerr := Newest(dir, rec)
		if cerr != nil {
			require.Error(t, nerr, "holders %+v, record %+v", holders, rec)
		} else {
			require.NoError(t, nerr, "holders %+v, record %+v", holders, rec)
			require.Equal(t, being, newest, "holders %+v, record %+v", holders, rec)
		}
		f, err := readFiles(dir, math.MaxUint64, false)
		require.NoError(t, err)
		trust, terr := TrustJournal(f.written, rec)
		var whole []state.Event
		for i, e := range f.events {
			if terr == nil && trust.Trusted(f.written[i]) {
				whole = append(whole, e)
			}
		}
		if cerr == nil {
			require.Equal(t, life, whole, "holders %+v, record %+v", holders, rec)
		}
		for after := uint64(0); after <= rec.Seq+1; after++ {
			for _, n := range []int{-1, 0, 1, 3, 1000} {
				got, through, err := TrustedPast(dir, rec, after, n)
				if terr != nil {
					require.Error(t, err, "holders %+v, record %+v", holders, rec)
					continue
				}
				require.NoError(t, err, "holders %+v, record %+v", holders, rec)
				require.Equal(t, trust.Through, through, "holders %+v, record %+v", holders, rec)
				var want []state.Event
				for _, e := range whole {
					if e.Seq > after {
						want = append(want, e)
					}
				}
				if n >= 0 && len(want) > n {
					want = want[len(want)-n:]
				}
				if len(want) == 0 {
					want = nil // none, however it was cut
				}
				require.Equal(t, want, got, "past %d, newest %d; holders %+v, record %+v", after, n, holders, rec)
			}
		}
	})
}

// TestTrustedPastReadsAnUnnumberedJournalWhole: a journal whose events
// carry no seq (the reference's) cannot be known by its ends; it is
// read whole, and cut as a numbered one is.
func TestTrustedPastReadsAnUnnumberedJournalWhole(t *testing.T) {
	dir := testkit.BootedDir(t)
	path := filepath.Join(dir, state.JournalFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"warning","message":"event 1"}`+"\n"+`{"type":"warning","message":"event 2"}`+"\n"), 0o600))
	messages := func(events []state.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Message)
		}
		return out
	}
	for _, tc := range []struct {
		after uint64
		n     int
		want  []string
	}{
		{0, -1, []string{"event 1", "event 2"}},
		{0, 1, []string{"event 2"}},
		{1, -1, []string{"event 2"}},
		{2, -1, nil},
	} {
		got, through, err := TrustedPast(dir, Record{}, tc.after, tc.n)
		require.NoError(t, err)
		assert.Equal(t, tc.want, messages(got), "past %d, newest %d", tc.after, tc.n)
		assert.Equal(t, uint64(2), through)
	}
}

// TestTrustedPastWhileTheHolderWrites: a reader's look at a live holder,
// which appends and starts new segments meanwhile, returns what was
// committed when it looked, and the next look what was committed since,
// each event once and none refused (a look that meets a new segment
// begun under it reads again).
func TestTrustedPastWhileTheHolderWrites(t *testing.T) {
	dir := testkit.BootedDir(t)
	const token = 4
	store, err := state.Open(state.HolderDir(dir, token))
	require.NoError(t, err)
	j, err := store.OpenJournal(state.Now(), 0)
	require.NoError(t, err)
	require.NoError(t, j.StartAt(1))
	t.Cleanup(func() { _ = j.Close() })

	const events = 400
	// Unbuffered: the holder appends its next event, and every fiftieth
	// time starts a new segment, while the reader looks at the last.
	committed := make(chan uint64)
	done, finished := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(done); <-finished }) // before the journal closes
	go func() {
		defer close(finished)
		defer close(committed)
		for seq := uint64(1); seq <= events; seq++ {
			if _, err := j.AppendStep([]state.Event{state.Warning(state.Now(), 0, "event")}); err != nil {
				t.Error(err)
				return
			}
			if seq%50 == 0 {
				if err := j.Rotate(); err != nil {
					t.Error(err)
					return
				}
			}
			select {
			case committed <- seq:
			case <-done: // the reader failed and is gone
				return
			}
		}
	}()
	var read []uint64
	var seen uint64
	for rec := range committed {
		got, through, err := TrustedPast(dir, Record{Token: token, Seq: rec}, seen, -1)
		require.NoError(t, err, "a look at seq %d", rec)
		require.Equal(t, rec, through)
		for _, e := range got {
			read = append(read, e.Seq)
		}
		seen = through
	}
	require.Len(t, read, events, "every committed event read once")
	for i, seq := range read {
		require.Equal(t, uint64(i+1), seq)
	}
}
