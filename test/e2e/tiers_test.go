package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
)

// TestTiersFileBlackBox: with SINGULARITY_TIERS_FILE a being whose
// balance is below a tier's bound enters it at its first framing: the
// journal has tier_changed and model_switched before cycle_started, the
// request asks the tier's model with the tier in its framing, and status
// and journal show the tier.
func TestTiersFileBlackBox(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	tiersFile := filepath.Join(w.dir, "tiers.json")
	require.NoError(t, os.WriteFile(tiersFile, []byte(`[{"below_usd": "100", "model": "frugal-model", "max_tool_rounds": 2}]`), 0o600))
	w.env["SINGULARITY_TIERS_FILE"] = tiersFile
	w.brama.Enqueue(bramatest.TextReply("Frugal.", bramatest.Usage(100, 10)))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	events := w.journal()
	assert.Equal(t, []string{state.EventStarted, state.EventTierChanged, state.EventModelSwitched, state.EventCycleStarted}, typesOf(events[:4]))
	assert.Equal(t, 1, events[1].Tier)
	assert.Equal(t, "10", events[1].Amount.String())
	reqs := w.brama.Completions()
	require.Len(t, reqs, 1)
	assert.Equal(t, "frugal-model", reqs[0].Completion.Model)
	msgs := reqs[0].Completion.Messages
	assert.True(t, strings.HasSuffix(msgs[1].Content, " Survival tier 1: the balance is below 100 USD; model frugal-model, at most 2 tool rounds a cycle."), msgs[1].Content)

	status := w.run("status")
	require.Equal(t, 0, status.code, status.stderr)
	assert.Contains(t, status.stdout, "stopped, tier 1")
	js := w.run("status", "--format", "json")
	require.Equal(t, 0, js.code, js.stderr)
	var doc struct {
		Beings []struct {
			Tier int `json:"tier"`
		} `json:"beings"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc))
	require.Len(t, doc.Beings, 1)
	assert.Equal(t, 1, doc.Beings[0].Tier)
	journal := w.run("journal")
	require.Equal(t, 0, journal.code, journal.stderr)
	assert.Contains(t, journal.stdout, "tier_changed")
	assert.Contains(t, journal.stdout, "tier=1 remaining=10")
}

func typesOf(events []state.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}
