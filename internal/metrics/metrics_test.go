package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

var (
	ada = observe.Being{Name: "Ada", ID: "agent-ada", AgentID: "agent-ada"}
	bo  = observe.Being{Name: "Bo", ID: "0123456789abcdef", AgentID: "agent-ada"}
)

// models are the model labels the tests' metrics know.
var models = []string{"sim-small", "sim-large"}

// feed gives m one completion, two tool calls with a credit, a grant and
// a warning for each being, and ends a cycle of each. Ada's completion is
// billed at sim-small, 64 of its prompt tokens cached; Bo's at a model
// the metrics do not know.
func feed(m *Metrics) {
	now := state.Now()
	for _, b := range []observe.Being{ada, bo} {
		model, cached := "sim-small", uint64(64)
		if b == bo {
			model, cached = "unlisted-model", 0
		}
		m.Step(observe.Step{Being: b, Status: "running", Balance: testkit.USD("1"), Events: []state.Event{state.Started(now)}})
		m.Step(observe.Step{Being: b, Status: "running", Balance: testkit.USD("0.99"), Elapsed: 300 * time.Millisecond, Finish: "tool_calls", Model: model,
			Events: []state.Event{
				state.ModelCompleted(now, 1, chat.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: cached}),
				state.Debited(now, 1, testkit.USD("0.0075"), testkit.USD("0.0025"), 120),
			}})
		m.Step(observe.Step{Being: b, Status: "running", Balance: testkit.USD("1.04"), Elapsed: 2 * time.Millisecond,
			Events: []state.Event{
				state.ToolFinished(now, 1, "finance__finance_sell_report", "success"),
				state.RevenueCredited(now, 1, testkit.USD("0.05"), "finance__finance_sell_report"),
			}})
		m.Step(observe.Step{Being: b, Status: "running", Balance: testkit.USD("0.79"), Elapsed: time.Millisecond,
			Events: []state.Event{
				state.ToolFinished(now, 1, "singularity_spawn_child", "failed"),
				{Type: observe.EventEndowmentGranted, At: now, Cycle: 1, Amount: testkit.USD("0.25")},
				state.Warning(now, 1, "w"),
			}})
		m.CycleEnded(b, 1, "completed")
		m.LasRestarted(b, "las")
	}
	m.Step(observe.Step{Being: bo, Status: "exhausted", Balance: money.Zero, Events: []state.Event{state.Stopped(now, 1, "exhausted", "")}})
	m.Step(observe.Step{Being: ada, Status: "running", Balance: testkit.USD("3.29"), Events: []state.Event{state.Funded(now, 1, testkit.USD("2.5"), "k1", "")}})
	m.DurableWrite(400 * time.Microsecond)
}

func TestPerBeing(t *testing.T) {
	m := New(Options{PerBeing: true, Models: models})
	feed(m)
	want := `
# HELP singularity_completions_total Model completions journaled, by finish reason and model.
# TYPE singularity_completions_total counter
singularity_completions_total{being="Ada-agent-ad",finish="tool_calls",model="sim-small"} 1
singularity_completions_total{being="Bo-01234567",finish="tool_calls",model="other"} 1
# HELP singularity_tokens_total Tokens of journaled completions, by kind (prompt, completion) and model.
# TYPE singularity_tokens_total counter
singularity_tokens_total{being="Ada-agent-ad",kind="completion",model="sim-small"} 20
singularity_tokens_total{being="Ada-agent-ad",kind="prompt",model="sim-small"} 100
singularity_tokens_total{being="Bo-01234567",kind="completion",model="other"} 20
singularity_tokens_total{being="Bo-01234567",kind="prompt",model="other"} 100
# HELP singularity_prompt_cached_tokens_total Prompt tokens of journaled completions that the provider served from its cache (a part of the prompt tokens), by model.
# TYPE singularity_prompt_cached_tokens_total counter
singularity_prompt_cached_tokens_total{being="Ada-agent-ad",model="sim-small"} 64
singularity_prompt_cached_tokens_total{being="Bo-01234567",model="other"} 0
# HELP singularity_cost_usd_total Debited cost in USD, by part (api, instance) and model; a float for observation, the ledger is exact.
# TYPE singularity_cost_usd_total counter
singularity_cost_usd_total{being="Ada-agent-ad",model="sim-small",part="api"} 0.0075
singularity_cost_usd_total{being="Ada-agent-ad",model="sim-small",part="instance"} 0.0025
singularity_cost_usd_total{being="Bo-01234567",model="other",part="api"} 0.0075
singularity_cost_usd_total{being="Bo-01234567",model="other",part="instance"} 0.0025
# HELP singularity_revenue_usd_total Revenue credited from trusted evidence, in USD.
# TYPE singularity_revenue_usd_total counter
singularity_revenue_usd_total{being="Ada-agent-ad"} 0.05
singularity_revenue_usd_total{being="Bo-01234567"} 0.05
# HELP singularity_funded_usd_total Money the operator added from outside the family (singularity fund), in USD.
# TYPE singularity_funded_usd_total counter
singularity_funded_usd_total{being="Ada-agent-ad"} 2.5
singularity_funded_usd_total{being="Bo-01234567"} 0
# HELP singularity_granted_usd_total Endowments granted to children, in USD.
# TYPE singularity_granted_usd_total counter
singularity_granted_usd_total{being="Ada-agent-ad"} 0.25
singularity_granted_usd_total{being="Bo-01234567"} 0.25
# HELP singularity_balance_usd Remaining balance in USD after the last durable step (summed over beings without the being label).
# TYPE singularity_balance_usd gauge
singularity_balance_usd{being="Ada-agent-ad"} 3.29
singularity_balance_usd{being="Bo-01234567"} 0
# HELP singularity_cycles_total Cycles ended, by status (completed, tool_round_limit, budget_exhausted, failed).
# TYPE singularity_cycles_total counter
singularity_cycles_total{being="Ada-agent-ad",status="completed"} 1
singularity_cycles_total{being="Bo-01234567",status="completed"} 1
# HELP singularity_tool_calls_total Tool calls journaled, by surface (a Las prefix, builtin or most) and outcome status.
# TYPE singularity_tool_calls_total counter
singularity_tool_calls_total{being="Ada-agent-ad",status="failed",surface="builtin"} 1
singularity_tool_calls_total{being="Ada-agent-ad",status="success",surface="finance"} 1
singularity_tool_calls_total{being="Bo-01234567",status="failed",surface="builtin"} 1
singularity_tool_calls_total{being="Bo-01234567",status="success",surface="finance"} 1
# HELP singularity_las_restarts_total Restarts of a being's MCP servers.
# TYPE singularity_las_restarts_total counter
singularity_las_restarts_total{being="Ada-agent-ad",server="las"} 1
singularity_las_restarts_total{being="Bo-01234567",server="las"} 1
# HELP singularity_beings Beings of the family by status.
# TYPE singularity_beings gauge
singularity_beings{status="exhausted"} 1
singularity_beings{status="running"} 1
# HELP singularity_warnings_total Warnings journaled.
# TYPE singularity_warnings_total counter
singularity_warnings_total{being="Ada-agent-ad"} 1
singularity_warnings_total{being="Bo-01234567"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"singularity_completions_total", "singularity_tokens_total", "singularity_prompt_cached_tokens_total", "singularity_cost_usd_total",
		"singularity_revenue_usd_total", "singularity_funded_usd_total", "singularity_granted_usd_total", "singularity_balance_usd",
		"singularity_cycles_total", "singularity_tool_calls_total", "singularity_las_restarts_total",
		"singularity_beings", "singularity_warnings_total"))
	samples := func(h prometheus.Histogram) uint64 {
		var d dto.Metric
		require.NoError(t, h.Write(&d))
		return d.GetHistogram().GetSampleCount()
	}
	assert.Equal(t, uint64(2), samples(m.modelTime), "one duration per completion")
	assert.Equal(t, uint64(1), samples(m.fsync))
}

// TestWithoutBeingLabel: SINGULARITY_METRICS_PER_BEING=false drops the
// label and keeps the sums, the balance included.
func TestWithoutBeingLabel(t *testing.T) {
	m := New(Options{PerBeing: false, Models: models})
	feed(m)
	want := `
# HELP singularity_completions_total Model completions journaled, by finish reason and model.
# TYPE singularity_completions_total counter
singularity_completions_total{finish="tool_calls",model="other"} 1
singularity_completions_total{finish="tool_calls",model="sim-small"} 1
# HELP singularity_prompt_cached_tokens_total Prompt tokens of journaled completions that the provider served from its cache (a part of the prompt tokens), by model.
# TYPE singularity_prompt_cached_tokens_total counter
singularity_prompt_cached_tokens_total{model="other"} 0
singularity_prompt_cached_tokens_total{model="sim-small"} 64
# HELP singularity_cost_usd_total Debited cost in USD, by part (api, instance) and model; a float for observation, the ledger is exact.
# TYPE singularity_cost_usd_total counter
singularity_cost_usd_total{model="other",part="api"} 0.0075
singularity_cost_usd_total{model="other",part="instance"} 0.0025
singularity_cost_usd_total{model="sim-small",part="api"} 0.0075
singularity_cost_usd_total{model="sim-small",part="instance"} 0.0025
# HELP singularity_balance_usd Remaining balance in USD after the last durable step (summed over beings without the being label).
# TYPE singularity_balance_usd gauge
singularity_balance_usd 3.29
# HELP singularity_tool_calls_total Tool calls journaled, by surface (a Las prefix, builtin or most) and outcome status.
# TYPE singularity_tool_calls_total counter
singularity_tool_calls_total{status="failed",surface="builtin"} 2
singularity_tool_calls_total{status="success",surface="finance"} 2
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"singularity_completions_total", "singularity_prompt_cached_tokens_total", "singularity_cost_usd_total", "singularity_balance_usd", "singularity_tool_calls_total"))
}

// TestHandlerServesTextExposition: the handler's answer parses with
// Prometheus's own parser and carries the process collectors on request.
func TestHandlerServesTextExposition(t *testing.T) {
	m := New(Options{PerBeing: true, Process: true})
	feed(m)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	assert.Contains(t, fams, "go_goroutines")
	assert.Contains(t, fams, "singularity_storage_fsync_seconds")
}

// TestSurvivalTier: each being's tier after its last step, per being;
// without the being label there is no such series.
func TestSurvivalTier(t *testing.T) {
	m := New(Options{PerBeing: true, Models: models})
	now := state.Now()
	m.Step(observe.Step{Being: ada, Status: "running", Balance: testkit.USD("2"), Events: []state.Event{state.Started(now)}})
	m.Step(observe.Step{Being: bo, Status: "running", Balance: testkit.USD("0.5"), Tier: 2,
		Events: []state.Event{state.TierChanged(now, 3, 2, testkit.USD("0.5")), state.CycleStarted(now, 3)}})
	want := `
# HELP singularity_survival_tier The survival tier each being lives in (its position in SINGULARITY_TIERS_FILE; 0 for none).
# TYPE singularity_survival_tier gauge
singularity_survival_tier{being="Ada-agent-ad"} 0
singularity_survival_tier{being="Bo-01234567"} 2
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "singularity_survival_tier"))
	family := New(Options{PerBeing: false, Models: models})
	family.Step(observe.Step{Being: bo, Status: "running", Tier: 2})
	count, err := testutil.GatherAndCount(family.Registry(), "singularity_survival_tier")
	require.NoError(t, err)
	assert.Zero(t, count)
}
