package fence

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run is the events from seq first to last written under token.
func run(token, first, last uint64) []Written {
	var out []Written
	for seq := first; seq <= last; seq++ {
		out = append(out, Written{Token: token, Seq: seq})
	}
	return out
}

func cat(parts ...[]Written) []Written {
	var out []Written
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestTrustJournal(t *testing.T) {
	cases := []struct {
		name      string
		journal   []Written
		rec       Record
		through   uint64
		untrusted int
		err       error
	}{
		{name: "nothing written, nothing committed"},
		{name: "a single process's journal, never clustered", journal: run(0, 1, 40), through: 40},
		{name: "a single process's journal, then the first holder's committed steps",
			journal: cat(run(0, 1, 40), run(7, 41, 50)), rec: Record{7, 50}, through: 50},
		{name: "the first holder's uncommitted step is not trusted",
			journal: cat(run(0, 1, 40), run(7, 41, 41)), through: 40, untrusted: 1},
		{name: "the holder's own tail past its record is not trusted",
			journal: run(7, 1, 12), rec: Record{7, 10}, through: 10, untrusted: 2},
		{name: "an old token's tail past the commit record is not trusted",
			journal: cat(run(7, 1, 12), run(9, 11, 15)), rec: Record{9, 15}, through: 15, untrusted: 2},
		{name: "a frozen holder's lines after the next holder's are not trusted",
			journal: cat(run(7, 1, 10), run(9, 11, 13), run(7, 11, 14), run(9, 14, 15)), rec: Record{9, 15},
			through: 15, untrusted: 4},
		{name: "a holder that never committed, between two that did",
			journal: cat(run(7, 1, 10), run(8, 11, 12), run(9, 11, 20)), rec: Record{9, 20}, through: 20, untrusted: 2},
		{name: "an unknown commit that was applied counts",
			journal: cat(run(7, 1, 11), run(9, 12, 12)), rec: Record{9, 12}, through: 12},
		{name: "a newer holder that committed nothing is not trusted",
			journal: cat(run(7, 1, 10), run(9, 11, 11)), rec: Record{7, 10}, through: 10, untrusted: 1},
		{name: "the journal lacks the record's last steps",
			journal: run(7, 1, 8), rec: Record{7, 10}, through: 8, err: ErrJournalBehind},
		{name: "the journal lacks the record's token",
			journal: run(7, 1, 10), rec: Record{9, 12}, through: 10, err: ErrJournalBehind},
		{name: "a trusted seq is missing",
			journal: cat(run(7, 1, 4), run(7, 6, 8)), rec: Record{7, 8}, err: ErrJournalGap},
		{name: "a segment dropped after a checkpoint leaves a run that starts later",
			journal: run(7, 30, 40), rec: Record{7, 40}, through: 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trust, err := TrustJournal(c.journal, c.rec)
			if c.err != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, c.err), "%v", err)
				if c.err == ErrJournalGap {
					return
				}
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, c.through, trust.Through)
			assert.Equal(t, c.untrusted, trust.Untrusted)
			trusted := 0
			for _, w := range c.journal {
				if trust.Trusted(w) {
					trusted++
					assert.LessOrEqual(t, w.Seq, trust.Through)
				}
			}
			assert.Equal(t, len(c.journal)-c.untrusted, trusted)
		})
	}
}

// TestTrustedStepsOfAFrozenHolder: which events of an interleaved
// journal are trusted, one by one.
func TestTrustedStepsOfAFrozenHolder(t *testing.T) {
	journal := cat(run(7, 1, 10), run(9, 11, 12), run(7, 11, 11), run(9, 13, 13))
	trust, err := TrustJournal(journal, Record{9, 13})
	require.NoError(t, err)
	assert.True(t, trust.Trusted(Written{7, 10}))
	assert.False(t, trust.Trusted(Written{7, 11}), "the old holder's line after the new holder started")
	assert.True(t, trust.Trusted(Written{9, 11}))
	assert.False(t, trust.Trusted(Written{8, 1}), "a token the journal does not hold")
	assert.Equal(t, map[uint64]uint64{7: 10, 9: 13}, trust.Bound)
}
