package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestSwitchToUnpricedModelRefused: on a bearer gateway, a being's
// self_switch_model to a model no price is known for is refused with the
// sentence of the configuration's refusal, and the being stays on its
// priced model; a response naming an unpriced model is debited at the
// reserved model's prices, with a warning
// (docs/money.md#no-free-model-by-accident).
func TestSwitchToUnpricedModelRefused(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-small", "my-free-model")
	prices := filepath.Join(w.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"gpt-small": {"input_usd_per_million": "0.1", "output_usd_per_million": "0.4"}}`), 0o600))
	w.env["BRAMA_PRICES_FILE"] = prices
	w.env["BRAMA_INPUT_PRICE_USD_PER_MILLION"], w.env["BRAMA_OUTPUT_PRICE_USD_PER_MILLION"] = "0", "0"
	w.brama.Enqueue(
		bramatest.ModelReply("gpt-small", bramatest.ToolCallsReply(bramatest.Usage(1000, 100),
			bramatest.Call("c1", "singularity_self_switch_model", `{"model":"my-free-model"}`))),
		// The answer names a model nobody priced: gpt-small's prices.
		bramatest.ModelReply("my-free-model", bramatest.TextReply("Staying.", bramatest.Usage(2000, 100))),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	assert.Equal(t, "gpt-small", reqs[1].Completion.Model, "the switch did not happen")
	events := w.journal()
	var outcome string
	for _, e := range events {
		if e.Type == state.EventToolFinished && e.Chat != nil {
			outcome = e.Chat.Content
		}
	}
	assert.Contains(t, outcome, "model_unpriced")
	assert.Contains(t, outcome, "model my-free-model has no price: add it to the prices file (singularity prices my-free-model) or set --allow-free-model")
	assert.Equal(t, []string{"0.00014", "0.00024"}, debits(events))
	assert.Contains(t, warnings(events), being.UnpricedModelBilled)
	st := w.loadState()
	assert.Equal(t, "gpt-small", st.Mind.CurrentModel)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}
