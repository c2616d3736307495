package journalview_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/state"
)

func seqs(lines []journalview.Line) []uint64 {
	var out []uint64
	for _, l := range lines {
		out = append(out, l.Head.Seq)
	}
	return out
}

// TestFollowerTail: Tail hands out the newest n lines, across a rotation
// when activity.jsonl holds fewer, and Next goes on after them.
func TestFollowerTail(t *testing.T) {
	tests := []struct {
		n    int
		want []uint64
	}{
		{0, nil},
		{2, []uint64{7, 8}},
		{3, []uint64{6, 7, 8}},
		{5, []uint64{4, 5, 6, 7, 8}},
		{100, []uint64{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), "state")
		j := newBeing(t, dir, "Ada", "1")
		for i := range 5 {
			step(t, j, state.Warning(t0, 1, fmt.Sprint("old ", i)))
		}
		require.NoError(t, j.Rotate())
		for i := range 3 {
			step(t, j, state.Warning(t0, 1, fmt.Sprint("new ", i)))
		}
		f := journalview.NewFollower(dir)
		lines, err := f.Tail(tt.n)
		require.NoError(t, err)
		assert.Equal(t, tt.want, seqs(lines), "tail %d", tt.n)
		step(t, j, state.Warning(t0, 1, "later"))
		lines, err = f.Next()
		require.NoError(t, err)
		require.Len(t, lines, 1, "tail %d: Next goes on after what Tail read", tt.n)
		assert.Equal(t, "warning", lines[0].Head.Type)
		more, err := f.Tail(5)
		require.NoError(t, err)
		assert.Empty(t, more, "Tail after Next is Next")
	}
}

// TestFollowerTailPositional: a journal without seqs (the reference's) is
// numbered by position, so Tail reads it from the start.
func TestFollowerTailPositional(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	newBeing(t, dir, "Ada", "1")
	var text string
	for range 4 {
		text += `{"type":"warning","at":"2026-03-01T12:00:00.000000Z","cycle":1,"message":"m"}` + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, state.JournalFile), []byte(text), 0o600))
	lines, err := journalview.NewFollower(dir).Tail(2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 4}, seqs(lines))
}

// TestFollowerTailLongSegment: a long activity.jsonl is read once, keeping
// only the newest lines as it goes.
func TestFollowerTailLongSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j := newBeing(t, dir, "Ada", "1")
	for i := range 50 {
		step(t, j, state.Warning(t0, 1, fmt.Sprint("line ", i)))
	}
	lines, err := journalview.NewFollower(dir).Tail(3)
	require.NoError(t, err)
	assert.Equal(t, []uint64{48, 49, 50}, seqs(lines))
}
