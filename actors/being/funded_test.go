package being_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// killedAfterItsEnd writes the child Bo (id) as a runtime SIGKILLed in
// the kill window left it: its `stopped <status>` committed (seq 3), but
// its state.json still the checkpoint of seq 2, saying it runs.
func killedAfterItsEnd(t *testing.T, opts being.Options, id, status string) string {
	t.Helper()
	dir, identity, child := childBo(opts, id)
	at := state.Now()
	events := []state.Event{state.Started(at), state.CycleStarted(at, 1), state.Stopped(at, 1, status, "balance 0.0001 USD cannot pay")}
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	child.Status, child.Cycle = state.StatusRunning, 1
	child.Budget.Remaining, child.Budget.APISpent = testkit.USD("0.0001"), testkit.USD("0.9999")
	seq := uint64(2)
	child.JournalSeq = &seq
	_, _, _, err := state.Boot(dir, false, identity, func() (*state.Being, error) { return child, nil })
	require.NoError(t, err)
	var lines []byte
	for _, e := range events {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(append(lines, line...), '\n')
	}
	require.NoError(t, os.WriteFile(testkit.JournalPath(dir), lines, 0o600))
	return dir
}

// boWorld is a gateway that tells on every completion Bo asks for, and
// a root that cycles once an hour, with an example Las.
func boWorld(t *testing.T) (*bramatest.Server, being.Options, chan struct{}) {
	t.Helper()
	srv := newBrama(t)
	boAsked := make(chan struct{}, 16)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		if strings.HasPrefix(r.Completion.Messages[0].Content, "You are Bo") {
			boAsked <- struct{}{}
		}
		return bramatest.TextReply("nothing to do", bramatest.Usage(10, 5))
	})
	opts := options(t, being.Run)
	withExampleLas(t, &opts, `{}`)
	opts.CycleInterval = time.Hour
	return srv, opts, boAsked
}

// TestKillWindowKeepsEndedChildDormant: a child whose committed journal
// ends its life (`stopped exhausted` or `stopped failed`) while its
// state.json, a checkpoint that lags it, says it runs, is loaded dormant
// by `run --resume` in one process: it boots nothing, journals nothing,
// starts no Las, and never asks the gateway. Fifty times each.
func TestKillWindowKeepsEndedChildDormant(t *testing.T) {
	const id = "7b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
	for _, status := range []string{state.StatusExhausted, state.StatusFailed} {
		t.Run(status, func(t *testing.T) {
			for i := range 50 {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					srv, opts, boAsked := boWorld(t)
					dir := killedAfterItsEnd(t, opts, id, status)
					journal, err := os.ReadFile(testkit.JournalPath(dir))
					require.NoError(t, err)
					h, d := startParentOfBo(t, srv, opts, id)
					assert.Equal(t, status, d.Status)
					require.Len(t, d.Children, 1, "a dormant child has its ledger and no Las")
					assert.Contains(t, d.Children[0].Id, "/ledger")
					h.shutdown()
					after, err := os.ReadFile(testkit.JournalPath(dir))
					require.NoError(t, err)
					require.Equal(t, string(journal), string(after), "the ended child journaled nothing")
					require.Empty(t, boAsked, "the ended child never asked the gateway")
				})
			}
		})
	}
}

// TestFundWakesDormantChild: a fund to a dormant exhausted child is
// journaled by it and answered once durable, and the child lives again
// in its own actor: it asks the gateway. The same key again
// answers the first application and writes nothing. A failed child
// refuses a fund and stays dormant.
func TestFundWakesDormantChild(t *testing.T) {
	const id = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
	srv, opts, boAsked := boWorld(t)
	dir := killedAfterItsEnd(t, opts, id, state.StatusExhausted)
	h, d := startParentOfBo(t, srv, opts, id)
	require.Equal(t, state.StatusExhausted, d.Status)
	bo := h.system.NewLocalPID("family/root/" + being.ChildActorName("Bo", id))
	fund := messages.FundRequest{Amount: testkit.USD("2"), Key: "wake", Note: "go on"}
	res, err := h.system.Root.RequestFuture(bo, fund, waitLimit).Result()
	require.NoError(t, err)
	got := res.(messages.FundResponse)
	require.NoError(t, got.Err)
	assert.Equal(t, "Bo", got.Name)
	assert.Equal(t, "2.0001", got.Remaining.String())
	assert.False(t, got.Duplicate)
	select {
	case <-boAsked:
	case <-time.After(waitLimit):
		t.Fatal("the funded child never cycled")
	}
	res, err = h.system.Root.RequestFuture(bo, fund, waitLimit).Result()
	require.NoError(t, err)
	again := res.(messages.FundResponse)
	assert.True(t, again.Duplicate)
	assert.Equal(t, "2.0001", again.Remaining.String())
	h.shutdown()
	events := testkit.Journal(t, dir)
	assert.Equal(t, 1, testkit.Count(events, state.EventFunded))
	st, err := state.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, state.StatusStopped, st.Status)
	assert.Equal(t, "2", st.Budget.Funded.String())
}

func TestFundRefusedByFailedChild(t *testing.T) {
	const id = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
	srv, opts, boAsked := boWorld(t)
	dir := killedAfterItsEnd(t, opts, id, state.StatusFailed)
	journal, err := os.ReadFile(testkit.JournalPath(dir))
	require.NoError(t, err)
	h, _ := startParentOfBo(t, srv, opts, id)
	bo := h.system.NewLocalPID("family/root/" + being.ChildActorName("Bo", id))
	res, err := h.system.Root.RequestFuture(bo, messages.FundRequest{Amount: testkit.USD("2"), Key: "k"}, waitLimit).Result()
	require.NoError(t, err)
	got := res.(messages.FundResponse)
	require.ErrorIs(t, got.Err, control.ErrRefused)
	assert.Contains(t, got.Err.Error(), "a failed being is not revived by a fund")
	h.shutdown()
	after, err := os.ReadFile(testkit.JournalPath(dir))
	require.NoError(t, err)
	assert.Equal(t, string(journal), string(after))
	assert.Empty(t, boAsked)
}
