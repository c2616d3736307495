package fence

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// holder writes what one holder of the being in dir wrote under token
// (0: the directory itself): warnings numbered from..to, one event a
// step, and a state.json at each seq of checkpoints.
type holder struct {
	token       uint64
	from, to    uint64
	checkpoints []uint64
	rotate      []uint64 // seqs after which the journal starts a new segment
	torn        bool     // a torn last line after the events
}

func (h holder) write(t *testing.T, dir string) {
	t.Helper()
	own := dir
	if h.token > 0 {
		own = state.HolderDir(dir, h.token)
	}
	store, err := state.Open(own)
	require.NoError(t, err)
	base, err := state.Load(dir)
	require.NoError(t, err)
	j, err := store.OpenJournal(state.Now(), 0)
	require.NoError(t, err)
	require.NoError(t, j.StartAt(h.from))
	for seq := h.from; seq <= h.to; seq++ {
		step, err := j.AppendStep([]state.Event{state.Warning(state.Now(), 0, fmt.Sprintf("event %d", seq))})
		require.NoError(t, err)
		require.Equal(t, seq, step[0].Seq)
		if slices.Contains(h.rotate, seq) {
			require.NoError(t, j.Rotate())
		}
	}
	require.NoError(t, j.Close())
	for _, seq := range h.checkpoints {
		b := *base
		b.JournalSeq = &seq
		b.Cycle = seq // tells the checkpoints apart
		require.NoError(t, store.Save(&b))
	}
	if h.torn {
		f, err := os.OpenFile(store.Path(state.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"type":"warning","seq":`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// TestRecoverTrustsOnlyWhatWasCommitted: the next holder loads the
// newest trusted checkpoint and the trusted events after it, whatever a
// former holder wrote past its last commit, and goes on numbering right
// after what was committed.
func TestRecoverTrustsOnlyWhatWasCommitted(t *testing.T) {
	cases := []struct {
		name    string
		holders []holder
		rec     Record
		// want: the checkpoint's seq (its Cycle), the seqs loaded after
		// it, the next seq, the untrusted count.
		checkpoint uint64
		events     []uint64
		next       uint64
		untrusted  int
	}{
		{
			name:       "a single process's directory, never clustered",
			holders:    []holder{{token: 0, from: 1, to: 4, checkpoints: []uint64{2}}},
			checkpoint: 2, events: []uint64{3, 4}, next: 5,
		},
		{
			name:       "the first holder died after its commit of seq 8 and two appends",
			holders:    []holder{{token: 0, from: 1, to: 0}, {token: 5, from: 1, to: 10, checkpoints: []uint64{5}}},
			rec:        Record{Token: 5, Seq: 8},
			checkpoint: 5, events: []uint64{6, 7, 8}, next: 9, untrusted: 2,
		},
		{
			name: "a zombie appended after the next holder took over",
			holders: []holder{
				{token: 0, from: 1, to: 0},
				{token: 5, from: 1, to: 12, checkpoints: []uint64{4}},
				{token: 9, from: 9, to: 11},
			},
			rec:        Record{Token: 9, Seq: 11},
			checkpoint: 4, events: []uint64{5, 6, 7, 8, 9, 10, 11}, next: 12, untrusted: 4,
		},
		{
			// Token 9's checkpoint covers all token 5 is trusted for:
			// token 5 is not read, and its late lines are not counted.
			name: "a zombie's late lines under a newer holder's checkpoint",
			holders: []holder{
				{token: 0, from: 1, to: 0},
				{token: 5, from: 1, to: 12, checkpoints: []uint64{4}},
				{token: 9, from: 9, to: 11, checkpoints: []uint64{9}},
			},
			rec:        Record{Token: 9, Seq: 11},
			checkpoint: 9, events: []uint64{10, 11}, next: 12,
		},
		{
			name: "a checkpoint past what its holder committed is skipped for an older one",
			holders: []holder{
				{token: 0, from: 1, to: 0},
				{token: 5, from: 1, to: 6, checkpoints: []uint64{6}},
			},
			rec:        Record{Token: 5, Seq: 4},
			checkpoint: 0, events: []uint64{1, 2, 3, 4}, next: 5, untrusted: 2,
		},
		{
			name: "a holder that died during an append left a torn line",
			holders: []holder{
				{token: 0, from: 1, to: 2, checkpoints: []uint64{2}},
				{token: 7, from: 3, to: 5, torn: true},
			},
			rec:        Record{Token: 7, Seq: 5},
			checkpoint: 2, events: []uint64{3, 4, 5}, next: 6,
		},
		{
			name: "a holder that took the lock and wrote nothing",
			holders: []holder{
				{token: 0, from: 1, to: 3, checkpoints: []uint64{3}},
				{token: 7, from: 4, to: 3},
			},
			rec:        Record{},
			checkpoint: 3, next: 4,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testkit.BootedDir(t)
			for _, h := range c.holders {
				h.write(t, dir)
			}
			const token = 100
			held, err := Recover(dir, token, c.rec)
			require.NoError(t, err)
			assert.Equal(t, uint64(token), held.Token)
			assert.Equal(t, c.checkpoint, held.Checkpoint.Seq())
			assert.Equal(t, c.checkpoint, held.Checkpoint.Cycle, "the checkpoint is the one written at that seq")
			var seqs []uint64
			for _, e := range held.Events {
				seqs = append(seqs, e.Seq)
				// Replayed events are read whole, not by their head.
				assert.Equal(t, fmt.Sprintf("event %d", e.Seq), e.Message, "event %d", e.Seq)
				assert.False(t, e.At.IsZero(), "event %d", e.Seq)
			}
			assert.Equal(t, c.events, seqs)
			assert.Equal(t, c.next, held.Next)
			assert.Equal(t, c.untrusted, held.Untrusted)
		})
	}
}

// TestRecoverRefuses: a commit record past
// every journal is refused, as are a holder's directory newer than the
// recovering holder and an entry of held/ that is no token; nothing is
// written.
func TestRecoverRefuses(t *testing.T) {
	t.Run("the journal is behind the record", func(t *testing.T) {
		dir := testkit.BootedDir(t)
		holder{token: 5, from: 1, to: 3}.write(t, dir)
		_, err := Recover(dir, 9, Record{Token: 5, Seq: 4})
		assert.ErrorIs(t, err, ErrJournalBehind)
	})
	t.Run("a newer holder wrote here", func(t *testing.T) {
		dir := testkit.BootedDir(t)
		holder{token: 12, from: 1, to: 1}.write(t, dir)
		_, err := Recover(dir, 9, Record{Token: 12, Seq: 1})
		assert.EqualError(t, err, fmt.Sprintf("state: %s was written under token 12, newer than this holder's 9", state.HolderDir(dir, 12)))
	})
	t.Run("an entry of held that is no token", func(t *testing.T) {
		dir := testkit.BootedDir(t)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, state.HeldDir, "x1"), 0o700))
		_, err := Recover(dir, 9, Record{})
		assert.EqualError(t, err, fmt.Sprintf("state: %s is not a holder's directory", filepath.Join(dir, state.HeldDir, "x1")))
	})
}
