package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/state"
)

// TestMergeKeepsEachBeingsSeqOrder: the family's lines come out in time
// order, but a being's own lines never leave their seq order, even when
// its clock went back (seq 4 and 5 stamped before seq 3); lines at the
// same instant keep the family's order.
func TestMergeKeepsEachBeingsSeqOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) state.Time { return state.Time{Time: t0.Add(time.Duration(ms) * time.Millisecond)} }
	ada, bo := &followed{order: 0}, &followed{order: 1}
	line := func(b *followed, seq uint64, ms int) entry {
		return entry{b, journalview.Line{Head: journalview.Head{Seq: seq, At: at(ms)}}}
	}
	lists := [][]entry{
		{line(ada, 1, 0), line(ada, 2, 10), line(ada, 3, 30), line(ada, 4, 20), line(ada, 5, 25), line(ada, 6, 40)},
		{line(bo, 1, 10), line(bo, 2, 22), line(bo, 3, 35)},
		{},
	}
	var got []string
	for _, e := range merge(lists) {
		got = append(got, map[*followed]string{ada: "ada", bo: "bo"}[e.b]+"/"+string(rune('0'+e.l.Head.Seq)))
	}
	assert.Equal(t, []string{"ada/1", "ada/2", "bo/1", "bo/2", "ada/3", "ada/4", "ada/5", "bo/3", "ada/6"}, got)
	assert.Empty(t, merge(nil))
}
