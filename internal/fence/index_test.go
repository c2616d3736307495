package fence

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// randomHolders is a life of holders as the cluster leaves it: each
// holder starts right after the last commit, writes some events,
// commits a prefix of them (perhaps none), may leave a checkpoint within
// what it applied, a torn line, and new segments, and is then taken
// over. It returns the holders and the commit record.
func randomHolders(r *rand.Rand) ([]holder, Record) {
	holders := []holder{{token: 0, from: 1, to: 0}} // the booted directory: a checkpoint at seq 0
	var rec Record
	token := uint64(0)
	for range 1 + r.IntN(6) {
		token += 1 + uint64(r.IntN(4))
		h := holder{token: token, from: rec.Seq + 1}
		h.to = h.from + uint64(r.IntN(9)) - 1 // none when to < from
		committed := rec.Seq
		if h.to >= h.from {
			committed = h.from - 1 + uint64(r.IntN(int(h.to-h.from)+2))
			for seq := h.from; seq < h.to; seq++ {
				if r.IntN(5) == 0 {
					h.rotate = append(h.rotate, seq)
				}
			}
		}
		if r.IntN(3) > 0 {
			// A checkpoint of what it applied: what it recovered at
			// the least, its own committed steps at the most.
			applied := max(committed, rec.Seq)
			if r.IntN(6) == 0 {
				applied = max(h.to, rec.Seq) // past its commit, as the trust rule must skip
			}
			low := rec.Seq
			if r.IntN(6) == 0 {
				low = 0 // older than what it recovered, which the search must look past
			}
			h.checkpoints = []uint64{low + uint64(r.IntN(int(applied-low)+1))}
		}
		h.torn = r.IntN(4) == 0
		if committed > rec.Seq {
			rec = Record{Token: token, Seq: committed}
		}
		holders = append(holders, h)
	}
	return holders, rec
}

// TestRecoverByIndexIsTheWholeRead: for random lives of holders,
// zombies, torn lines and segments, Recover (by the holders' indexes)
// loads exactly what reading every event whole gives. Only its count of
// untrusted events may be smaller: it counts those of the holders it
// read.
func TestRecoverByIndexIsTheWholeRead(t *testing.T) {
	eachRandomLife(t, 3, 200, func(t *testing.T, dir string, holders []holder, rec Record) {
		const token = math.MaxUint32
		got, err := Recover(dir, token, rec)
		f, werr := readFiles(dir, token, true)
		require.NoError(t, werr)
		want, _, werr := f.recover(token, rec)
		if werr != nil {
			require.Error(t, err, "holders %+v, record %+v", holders, rec)
			return
		}
		require.NoError(t, err, "holders %+v, record %+v", holders, rec)
		require.LessOrEqual(t, got.Untrusted, want.Untrusted, "holders %+v, record %+v", holders, rec)
		got.Untrusted = want.Untrusted
		require.Equal(t, want, got, "holders %+v, record %+v", holders, rec)
	})
}

// eachRandomLife runs check, as a subtest each, on lives random lives
// of holders (randomHolders, drawn from seed), each written to a booted
// directory of its own.
func eachRandomLife(t *testing.T, seed uint64, lives int, check func(t *testing.T, dir string, holders []holder, rec Record)) {
	r := rand.New(rand.NewPCG(27, seed))
	for i := range lives {
		holders, rec := randomHolders(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := testkit.BootedDir(t)
			for _, h := range holders {
				h.write(t, dir)
			}
			check(t, dir, holders, rec)
		})
	}
}

// damage makes token 3's first segment in dir lose its last line: its
// ends no longer follow one another, so indexing it is refused.
func damage(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(state.HolderDir(dir, 3), "activity-1.jsonl")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-2], "")), 0o600))
}

// TestRecoverReadsTheNewerHolders: a takeover reads holders newest
// first, only until those read decide what it loads; an older holder's
// journal, damaged here so that reading it fails, is not read while a
// newer trusted checkpoint covers everything it is trusted for, and is
// when none does.
func TestRecoverReadsTheNewerHolders(t *testing.T) {
	older := []holder{
		{token: 3, from: 1, to: 6, rotate: []uint64{3}, checkpoints: []uint64{4}},
		{token: 5, from: 7, to: 9, checkpoints: []uint64{8}, torn: true},
		{token: 8, from: 10, to: 14, checkpoints: []uint64{12}},
	}
	cases := []struct {
		name   string
		newest holder
		rec    Record
		// want: the checkpoint's seq (its Cycle), the seqs loaded after
		// it, the next seq, the untrusted count.
		checkpoint uint64
		events     []uint64
		next       uint64
		untrusted  int
	}{
		{
			// Token 5's torn line is not read either.
			name:       "a newer checkpoint covers the damaged holder",
			newest:     holder{token: 9, from: 15, to: 18, checkpoints: []uint64{16}},
			rec:        Record{Token: 9, Seq: 17},
			checkpoint: 16, events: []uint64{17}, next: 18, untrusted: 1,
		},
		{
			// Token 8's checkpoint reaches token 9's first seq less one.
			name:       "the newest holder left no checkpoint",
			newest:     holder{token: 9, from: 15, to: 18},
			rec:        Record{Token: 9, Seq: 18},
			checkpoint: 12, events: []uint64{13, 14, 15, 16, 17, 18}, next: 19,
		},
		{
			// Token 9 checkpointed seq 10 only, under its first seq less
			// one: token 8, trusted through 14, must be read.
			name:       "the newest checkpoint is older than the newest holder's start",
			newest:     holder{token: 9, from: 15, to: 18, checkpoints: []uint64{10}},
			rec:        Record{Token: 9, Seq: 18},
			checkpoint: 12, events: []uint64{13, 14, 15, 16, 17, 18}, next: 19,
		},
		{
			// Token 9 committed nothing: its events and its checkpoint
			// are untrusted, and token 8 must be read.
			name:       "the record is older than the holders read",
			newest:     holder{token: 9, from: 15, to: 16, checkpoints: []uint64{14}},
			rec:        Record{Token: 8, Seq: 14},
			checkpoint: 12, events: []uint64{13, 14}, next: 15, untrusted: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testkit.BootedDir(t)
			for _, h := range append(slices.Clone(older), c.newest) {
				h.write(t, dir)
			}
			damage(t, dir)
			held, err := Recover(dir, 20, c.rec)
			require.NoError(t, err)
			assert.Equal(t, c.checkpoint, held.Checkpoint.Cycle)
			var seqs []uint64
			for _, e := range held.Events {
				seqs = append(seqs, e.Seq)
			}
			assert.Equal(t, c.events, seqs)
			assert.Equal(t, c.next, held.Next)
			assert.Equal(t, c.untrusted, held.Untrusted)
		})
	}

	t.Run("no newer checkpoint covers it", func(t *testing.T) {
		dir := testkit.BootedDir(t)
		for _, h := range []holder{older[0], {token: 5, from: 7, to: 9}} {
			h.write(t, dir)
		}
		damage(t, dir)
		_, err := Recover(dir, 20, Record{Token: 5, Seq: 9})
		assert.ErrorContains(t, err, "begins at seq 4 after seq 2")
	})
}

// TestTrustSpansIsTrustJournal: over random journals of one run of
// seqs per token, the trust rule by spans says what the rule by events
// says, refusals included.
func TestTrustSpansIsTrustJournal(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 4))
	for range 2000 {
		var spans []Span
		var journal []Written
		token := uint64(0)
		for range 1 + r.IntN(5) {
			s := Span{Token: token}
			if r.IntN(4) > 0 {
				s.First = 1 + uint64(r.IntN(12))
				s.Last = s.First + uint64(r.IntN(6))
				for seq := s.First; seq <= s.Last; seq++ {
					journal = append(journal, Written{Token: token, Seq: seq})
				}
			}
			spans = append(spans, s)
			token += 1 + uint64(r.IntN(3))
		}
		rec := Record{}
		if r.IntN(5) > 0 {
			rec = Record{Token: uint64(r.IntN(int(token) + 1)), Seq: uint64(r.IntN(16))}
		}
		want, werr := TrustJournal(journal, rec)
		got, err := TrustSpans(spans, rec)
		for _, sentinel := range []error{ErrJournalGap, ErrJournalBehind} {
			require.Equal(t, errors.Is(werr, sentinel), errors.Is(err, sentinel), "spans %+v, record %+v: %v / %v", spans, rec, werr, err)
		}
		if werr == nil {
			require.NoError(t, err)
			require.Equal(t, want, got, "spans %+v, record %+v", spans, rec)
		}
	}
}

// TestIndexHoldingRefuses: a holder's journal that its ends cannot
// vouch for is refused, or found out when its events are read.
func TestIndexHoldingRefuses(t *testing.T) {
	write := func(t *testing.T, h holder) (string, state.Holding) {
		dir := testkit.BootedDir(t)
		h.write(t, dir)
		return dir, state.Holding{Token: h.token, Dir: state.HolderDir(dir, h.token)}
	}
	t.Run("a torn line in an older segment", func(t *testing.T) {
		_, h := write(t, holder{token: 5, from: 1, to: 4, rotate: []uint64{2}})
		f, err := os.OpenFile(filepath.Join(h.Dir, "activity-1.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"type":"warning","seq":`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = state.IndexHolding(h)
		assert.ErrorIs(t, err, state.ErrTornLine)
	})
	t.Run("a segment that does not follow the one before", func(t *testing.T) {
		_, h := write(t, holder{token: 5, from: 1, to: 6, rotate: []uint64{2, 4}})
		require.NoError(t, os.Remove(filepath.Join(h.Dir, "activity-3.jsonl")))
		_, err := state.IndexHolding(h)
		assert.ErrorContains(t, err, "begins at seq 5 after seq 2")
	})
	t.Run("a line missing between the ends", func(t *testing.T) {
		dir, h := write(t, holder{token: 5, from: 1, to: 4})
		path := filepath.Join(h.Dir, state.JournalFile)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		require.Len(t, lines, 4)
		require.NoError(t, os.WriteFile(path, []byte(lines[0]+"\n"+lines[1]+"\n"+lines[3]+"\n"), 0o600))
		x, err := state.IndexHolding(h)
		require.NoError(t, err, "the ends still say 1 through 4")
		_, err = x.ReadPast(0)
		assert.ErrorContains(t, err, "seq 4 where seq 3 was due")
		_, err = Recover(dir, 9, Record{Token: 5, Seq: 4})
		assert.ErrorContains(t, err, "seq 4 where seq 3 was due", "a takeover that replays it refuses")
	})
	t.Run("events without a seq are read whole", func(t *testing.T) {
		dir := testkit.BootedDir(t)
		path := filepath.Join(dir, state.JournalFile)
		require.NoError(t, os.WriteFile(path, []byte(`{"type":"warning","message":"event 1"}`+"\n"+`{"type":"warning","message":"event 2"}`+"\n"), 0o600))
		_, err := state.IndexHolding(state.Holding{Dir: dir})
		require.ErrorIs(t, err, state.ErrUnnumbered)
		held, err := Recover(dir, 9, Record{})
		require.NoError(t, err)
		require.Len(t, held.Events, 2)
		assert.Equal(t, "event 2", held.Events[1].Message)
		assert.Equal(t, uint64(3), held.Next)
	})
}

// TestReadPastEndsAtTheIndex: events a live holder appends after its
// index was read are left out of ReadPast, not refused, and the next
// index has them.
func TestReadPastEndsAtTheIndex(t *testing.T) {
	dir := testkit.BootedDir(t)
	holder{token: 5, from: 1, to: 4}.write(t, dir)
	h := state.Holding{Token: 5, Dir: state.HolderDir(dir, 5)}
	x, err := state.IndexHolding(h)
	require.NoError(t, err)
	require.Equal(t, uint64(4), x.Last)

	store, err := state.Open(h.Dir)
	require.NoError(t, err)
	j, err := store.OpenJournal(state.Now(), 0)
	require.NoError(t, err)
	step, err := j.AppendStep([]state.Event{state.Warning(state.Now(), 0, "event 5")})
	require.NoError(t, err)
	require.Equal(t, uint64(5), step[0].Seq)
	require.NoError(t, j.Close())

	events, err := x.ReadPast(2)
	require.NoError(t, err)
	require.Len(t, events, 2)
	assert.Equal(t, uint64(4), events[1].Seq)
	x, err = state.IndexHolding(h)
	require.NoError(t, err)
	events, err = x.ReadPast(2)
	require.NoError(t, err)
	require.Len(t, events, 3)
	assert.Equal(t, "event 5", events[2].Message)
}
