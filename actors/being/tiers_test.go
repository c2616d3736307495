package being_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tiers"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// tierPrices are a dear model and a cheap one, twenty times less.
var tierPrices = prices.Table{
	"dear":  {Input: testkit.USD("10"), Output: testkit.USD("30")},
	"cheap": {Input: testkit.USD("0.5"), Output: testkit.USD("1.5")},
}

// withTierPrices prices the gateway's completions by tierPrices.
func withTierPrices(fo *family.Options) { fo.Gateway.Prices = prices.Book{File: tierPrices} }

// tierWorld answers every completion with a plain reply of 1,000 prompt
// and 100 completion tokens (one round a cycle), priced by tierPrices.
func tierWorld(t *testing.T, table tiers.Table) (*bramatest.Server, being.Options) {
	t.Helper()
	srv := newBrama(t)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("resting", bramatest.Usage(1000, 100))
	})
	opts := options(t, being.Run)
	opts.Model = "dear"
	opts.StartingBalance = testkit.USD("1")
	opts.MinCompletionTokens = 1
	opts.MaxTokens = 100
	opts.Prices = prices.Book{File: tierPrices}
	opts.Tiers = table
	return srv, opts
}

// TestTierSwitchesTheModel: once a cycle ends below the tier's bound,
// the next cycle's framing journals tier_changed and model_switched
// before its cycle_started, says so in its text, and asks the tier's
// model; later cycles stay in the tier without journaling it again.
func TestTierSwitchesTheModel(t *testing.T) {
	table := tiers.Table{{Below: testkit.USD("0.99"), Model: "cheap", MaxToolRounds: 3}}
	srv, opts := tierWorld(t, table)
	h := start(t, srv, opts, withTierPrices)
	h.reportFor(4)
	h.shutdown()

	events := h.journal()
	var types []string
	for _, e := range events {
		switch e.Type {
		case state.EventTierChanged, state.EventModelSwitched, state.EventCycleStarted:
			types = append(types, e.Type)
		}
	}
	require.GreaterOrEqual(t, len(types), 5)
	assert.Equal(t, []string{state.EventCycleStarted, state.EventTierChanged, state.EventModelSwitched, state.EventCycleStarted, state.EventCycleStarted}, types[:5],
		"cycle 1 costs 0.013 of 1 USD; cycle 2 enters the tier")
	var changed state.Event
	for _, e := range events {
		if e.Type == state.EventTierChanged {
			changed = e
			break
		}
	}
	assert.Equal(t, 1, changed.Tier)
	assert.Equal(t, uint64(2), changed.Cycle)
	assert.Equal(t, "0.987", changed.Amount.String(), "entered at the balance after cycle 1: 1 − 0.01 − 0.003")

	reqs := srv.Completions()
	require.GreaterOrEqual(t, len(reqs), 3)
	assert.Equal(t, "dear", reqs[0].Completion.Model)
	assert.Equal(t, "cheap", reqs[1].Completion.Model)
	msgs := reqs[1].Completion.Messages
	framing := msgs[len(msgs)-1].Content // cycle 2's framing, after cycle 1's exchange
	assert.True(t, strings.HasSuffix(framing, " Survival tier 1: the balance is below 0.99 USD; model cheap, at most 3 tool rounds a cycle."), "%q", framing)
	assert.NotContains(t, reqs[0].Completion.Messages[1].Content, "Survival tier")

	st := h.state()
	assert.Equal(t, 1, st.Tier)
	assert.Equal(t, "cheap", st.Mind.CurrentModel)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestTiersLengthenALife lives two beings to exhaustion on the same
// starting balance and gateway, one without tiers and one whose tier
// below 0.5 USD switches it to a model twenty times cheaper: the tiered
// being lives many more cycles, and both spend exactly what they had.
func TestTiersLengthenALife(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of cycles")
	}
	life := func(table tiers.Table) (uint64, *state.Being, []state.Event) {
		srv, opts := tierWorld(t, table)
		h := start(t, srv, opts, withTierPrices)
		stopped := h.stopped()
		require.Equal(t, state.StatusExhausted, stopped.Status, "%v", stopped.Err)
		st := h.state()
		return st.Cycle, st, h.journal()
	}
	plain, plainState, plainEvents := life(nil)
	tiered, tieredState, tieredEvents := life(tiers.Table{{Below: testkit.USD("0.5"), Model: "cheap"}})
	t.Logf("cycles until exhaustion from 1 USD: %d without tiers, %d with a tier below 0.5 USD on a model twenty times cheaper", plain, tiered)
	assert.Greater(t, tiered, 5*plain)
	for _, l := range []struct {
		st     *state.Being
		events []state.Event
	}{{plainState, plainEvents}, {tieredState, tieredEvents}} {
		require.NoError(t, testkit.CheckInvariant(l.st.Budget, l.events))
		assert.GreaterOrEqual(t, l.st.Budget.Remaining.Sign(), 0, "no overdraft")
	}
	assert.Equal(t, 1, testkit.Count(tieredEvents, state.EventTierChanged))
}

// TestOwnSwitchWinsInsideTheTier: a being switched to the tier's model
// on entering it may switch back by itself, and stays on its own choice
// for the rest of the tier.
func TestOwnSwitchWinsInsideTheTier(t *testing.T) {
	table := tiers.Table{{Below: testkit.USD("0.99"), Model: "cheap"}}
	srv, opts := tierWorld(t, table)
	srv.SetModels("dear", "cheap")
	var n atomic.Int64
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		if n.Add(1) == 2 { // cycle 2, the first on the tier's model
			return bramatest.ToolCallsReply(bramatest.Usage(1000, 100),
				bramatest.Call("switch", "singularity_self_switch_model", `{"model":"dear"}`))
		}
		return bramatest.TextReply("resting", bramatest.Usage(1000, 100))
	})
	h := start(t, srv, opts, withTierPrices)
	h.reportFor(4)
	h.shutdown()
	models := srv.AskedModels()
	require.GreaterOrEqual(t, len(models), 5)
	assert.Equal(t, []string{"dear", "cheap", "dear", "dear", "dear"}, models[:5],
		"cycle 1 dear; cycle 2 enters the tier on cheap and switches back; cycles 3 and 4 stay on the being's choice")
	assert.Equal(t, 1, testkit.Count(h.journal(), state.EventTierChanged))
}

// TestUnservedModelFallsBackAlongTheTiers: with Brama, a tier whose model
// is refused with 404 (not about credentials) does not fail the being:
// the cycle fails with a warning and model_switched to the model of the
// tier above, which the next cycle asks (docs/brama.md#unserved-models).
// A later refusal of that one falls back to the base model, where the
// being lives on.
func TestUnservedModelFallsBackAlongTheTiers(t *testing.T) {
	table := tiers.Table{
		{Below: testkit.USD("5"), Model: "cheap"},
		{Below: testkit.USD("2"), Model: "ghost"},
	}
	srv, opts := tierWorld(t, table)
	var cheapRefused atomic.Bool
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		switch {
		case r.Completion.Model == "ghost",
			r.Completion.Model == "cheap" && !cheapRefused.Swap(true):
			return bramatest.ErrorReply(http.StatusNotFound, "model not found: "+r.Completion.Model)
		}
		return bramatest.TextReply("resting", bramatest.Usage(1000, 100))
	})
	h := start(t, srv, opts, withTierPrices)
	h.reportFor(4)
	h.shutdown()

	asked := srv.AskedModels()
	require.GreaterOrEqual(t, len(asked), 4)
	assert.Equal(t, []string{"ghost", "cheap", "dear", "dear"}, asked[:4])
	events := h.journal()
	var switched, warned []string
	for _, e := range events {
		switch e.Type {
		case state.EventModelSwitched:
			switched = append(switched, e.Model)
		case state.EventWarning:
			warned = append(warned, e.Message)
		}
	}
	assert.Equal(t, []string{"ghost", "cheap", "dear"}, switched)
	assert.Contains(t, warned, "model ghost is not served: switched to cheap")
	assert.Contains(t, warned, "model cheap is not served: switched to dear")
	st := h.state()
	assert.Equal(t, state.StatusStopped, st.Status, "the being lives on")
	assert.Equal(t, 2, st.Tier)
	assert.Equal(t, "dear", st.Mind.CurrentModel)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}
