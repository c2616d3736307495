package fence

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// lifeOfHolders writes a being that holders took over in turn, each
// living cycles cycles of a prompt, an answer and a debit (about 2 KB of
// journal a cycle, as the demo world's beings write) and leaving a
// checkpoint at its last step, but the last holder, which died before
// its next checkpoint. It returns the directory and the record
// of the last holder's last commit.
func lifeOfHolders(tb testing.TB, holders int, cycles uint64) (string, Record) {
	tb.Helper()
	dir := testkit.BootedDir(tb)
	base, err := state.Load(dir)
	require.NoError(tb, err)
	prompt := chat.Message{Role: "user", Content: strings.Repeat("Begin autonomous cycle. Balance: 2.390786258602 USD. ", 20)}
	answer := chat.Message{Role: "assistant", Content: strings.Repeat("I will sell a report and remember it. ", 25)}
	cost := testkit.USD("0.000886613527")
	seq := uint64(1)
	var rec Record
	for h := 1; h <= holders; h++ {
		token := uint64(h) * 10
		store, err := state.Open(state.HolderDir(dir, token))
		require.NoError(tb, err)
		j, err := store.OpenJournal(state.Now(), 0)
		require.NoError(tb, err)
		require.NoError(tb, j.StartAt(seq))
		for c := range cycles {
			at := state.Now()
			step, err := j.AppendStep([]state.Event{
				state.CycleStarted(at, c, prompt),
				state.ModelCompleted(at, c, chat.Usage{PromptTokens: 5812, CompletionTokens: 12, TotalTokens: 5824}, answer),
				state.Debited(at, c, cost, cost.Sub(cost), 5824),
			})
			require.NoError(tb, err)
			seq = step[len(step)-1].Seq + 1
		}
		require.NoError(tb, j.Close())
		last := seq - 1
		rec = Record{Token: token, Seq: last}
		if h == holders {
			break // it died before its next checkpoint
		}
		b := *base
		b.JournalSeq = &last
		require.NoError(tb, store.Save(&b))
	}
	return dir, rec
}

// BenchmarkRecover is what a new holder reads of one being that 8 or 32
// holders held before it, 100 cycles each (about 1.6 MB of journal
// every eight): "index" is Recover, which reads holders newest first,
// each by its journal's ends, until those read decide the load (here
// the last two), and only the last holder's events (the ones past the
// newest checkpoint); "whole" decodes every event of every holder
// (recoverWhole, what Recover falls back on for a journal it cannot
// index). The index read should cost the same for 8 holders and 32.
func BenchmarkRecover(b *testing.B) {
	for _, holders := range []int{8, 32} {
		dir, rec := lifeOfHolders(b, holders, 100)
		for _, r := range []struct {
			name    string
			recover func(string, uint64, Record) (durable.Held, error)
		}{{"index", Recover}, {"whole", recoverWhole}} {
			b.Run(fmt.Sprintf("%s/holders=%d", r.name, holders), func(b *testing.B) {
				for b.Loop() {
					if _, err := r.recover(dir, math.MaxUint32, rec); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The life the benchmark reads recovers by index as by the whole read.
func TestRecoverOfALongLifeByIndexAsWhole(t *testing.T) {
	dir, rec := lifeOfHolders(t, 3, 10)
	got, err := Recover(dir, 99, rec)
	require.NoError(t, err)
	want, err := recoverWhole(dir, 99, rec)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, rec.Seq+1, got.Next)
	require.Len(t, got.Events, 30, "the last holder's 10 cycles are replayed")
	require.Equal(t, state.EventModelCompleted, got.Events[1].Type)
	require.NotNil(t, got.Events[1].Chat, "and read whole")
}

// BenchmarkReaderLook is what a reader that follows a family across
// machines (`singularity journal --follow`) reads of one being at each
// look, for a being that 8 or 32 holders held for 100 cycles each:
// "past" is TrustedPast of the events past the last one seen, which
// reads the holders' ends and nothing whole when nothing is new, and
// "counted" is Counted, which reads the being's whole life, as each look
// did before. The first should not grow with the holders' events.
func BenchmarkReaderLook(b *testing.B) {
	for _, holders := range []int{8, 32} {
		dir, rec := lifeOfHolders(b, holders, 100)
		b.Run(fmt.Sprintf("past/holders=%d", holders), func(b *testing.B) {
			for b.Loop() {
				events, _, err := TrustedPast(dir, rec, rec.Seq, -1)
				if err != nil || len(events) != 0 {
					b.Fatal(err, len(events))
				}
			}
		})
		b.Run(fmt.Sprintf("counted/holders=%d", holders), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Counted(dir, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
