package family_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/metrics"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// quiet is an observer that reports when every being of the family has
// ended its last cycle: beings are expected from the root on and from
// every child_added, so a child spawned in a parent's last cycle is
// waited for too.
type quiet struct {
	max uint64

	mu       sync.Mutex
	expected map[string]bool // being id -> ended its last cycle
	done     chan struct{}
	closed   bool
}

func newQuiet(rootID string, max uint64) *quiet {
	return &quiet{max: max, expected: map[string]bool{rootID: false}, done: make(chan struct{})}
}

func (q *quiet) Step(s observe.Step) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range s.Events {
		if e.Type == state.EventChildAdded && e.Child != nil {
			if _, ok := q.expected[e.Child.ID]; !ok {
				q.expected[e.Child.ID] = false
			}
		}
	}
}

func (q *quiet) CycleEnded(b observe.Being, cycle uint64, _ string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cycle < q.max {
		return
	}
	q.expected[b.ID] = true
	for _, ended := range q.expected {
		if !ended {
			return
		}
	}
	if !q.closed {
		q.closed = true
		close(q.done)
	}
}

func (*quiet) LasStarted(observe.Being, string)   {}
func (*quiet) LasRestarted(observe.Being, string) {}
func (*quiet) DurableWrite(time.Duration)         {}

// sample finds the value of the series of family name whose labels
// include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, found
}

func float(a money.Amount) float64 {
	f, _ := a.Rat().Float64()
	return f
}

// TestMetricsAgreeWithJournals scrapes /metrics of a living family (the
// demo world: spawning, earning, Las and built-in tools) once every being
// has ended its third cycle and is idle, parses the exposition with
// Prometheus's own parser, and checks every counter against the beings'
// journals: completions, tokens, cached prompt tokens, cost (api and
// instance, to 1e-9), revenue, tool calls by surface and status, cycles,
// balances. Every completion is labelled with the model it was billed
// at, one the metrics know.
func TestMetricsAgreeWithJournals(t *testing.T) {
	const cycles = 3
	m := metrics.New(metrics.Options{PerBeing: true, Models: []string{"any"}})
	dir := filepath.Join(t.TempDir(), "state")
	rootID := testkit.Identity().AgentID
	q := newQuiet(rootID, cycles)
	w := startWorld(t, worldConfig{dir: dir, observer: observe.Tee(m, q), maxCycles: cycles, metrics: m})
	select {
	case <-q.done:
	case <-time.After(longWait):
		t.Fatalf("the family never went quiet: %v", q.expected)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.debugURL+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var parser expfmt.TextParser
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the exposition parses")
	for _, name := range []string{
		"singularity_completions_total", "singularity_tokens_total", "singularity_prompt_cached_tokens_total", "singularity_cost_usd_total",
		"singularity_revenue_usd_total", "singularity_balance_usd", "singularity_cycles_total",
		"singularity_tool_calls_total", "singularity_tool_duration_seconds", "singularity_completion_duration_seconds",
		"singularity_beings", "singularity_storage_fsync_seconds",
	} {
		require.Contains(t, fams, name)
	}
	// The last cycle's checkpoint is written in the background: state.json
	// is read once the family has stopped, its final checkpoints durable.
	require.NoError(t, w.shutdown().Err)

	family, err := journalview.Family(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(family), 3, "the root spawned")
	var completions float64
	for _, b := range family {
		label := observe.Being{Name: b.Name, ID: b.ID}.Label()
		being := map[string]string{"being": label}
		events, err := state.ReadAll(b.Dir)
		require.NoError(t, err)
		st, err := state.Load(b.Dir)
		require.NoError(t, err)

		var prompt, completion, cached uint64
		api, instance, earned := money.Zero, money.Zero, money.Zero
		tools := map[[2]string]float64{}
		n := 0
		for _, e := range events {
			switch e.Type {
			case state.EventModelCompleted:
				n++
				prompt += e.Usage.PromptTokens
				completion += e.Usage.CompletionTokens
				cached += e.Usage.CachedTokens
			case state.EventCostDebited:
				api, instance = api.Add(e.API), instance.Add(e.Instance)
			case state.EventRevenueCredited:
				earned = earned.Add(e.Amount)
			case state.EventToolFinished:
				tools[[2]string{observe.Surface(e.Tool), e.Status}]++
			}
		}
		require.Positive(t, n, "%s completed", b.Name)
		got, ok := sample(fams, "singularity_completions_total", being)
		require.True(t, ok, "%s has completions", label)
		assert.Equal(t, float64(n), got, "%s completions", label)
		completions += got
		got, _ = sample(fams, "singularity_completions_total", map[string]string{"being": label, "model": "any"})
		assert.Equal(t, float64(n), got, "%s completions of the model asked for", label)
		got, _ = sample(fams, "singularity_tokens_total", map[string]string{"being": label, "kind": "prompt", "model": "any"})
		assert.Equal(t, float64(prompt), got, "%s prompt tokens", label)
		got, _ = sample(fams, "singularity_prompt_cached_tokens_total", map[string]string{"being": label, "model": "any"})
		assert.Equal(t, float64(cached), got, "%s cached prompt tokens", label)
		got, _ = sample(fams, "singularity_tokens_total", map[string]string{"being": label, "kind": "completion"})
		assert.Equal(t, float64(completion), got, "%s completion tokens", label)
		got, _ = sample(fams, "singularity_cost_usd_total", map[string]string{"being": label, "part": "api"})
		assert.InDelta(t, float(api), got, 1e-9, "%s api cost", label)
		got, _ = sample(fams, "singularity_cost_usd_total", map[string]string{"being": label, "part": "instance"})
		assert.InDelta(t, float(instance), got, 1e-9, "%s instance cost", label)
		assert.True(t, api.Add(instance).Equal(st.Budget.APISpent.Add(st.Budget.InstanceSpent)), "the journal and the state agree")
		got, _ = sample(fams, "singularity_revenue_usd_total", being)
		assert.InDelta(t, float(earned), got, 1e-9, "%s revenue", label)
		got, _ = sample(fams, "singularity_balance_usd", being)
		assert.InDelta(t, float(st.Budget.Remaining), got, 1e-9, "%s balance", label)
		got, ok = sample(fams, "singularity_las_restarts_total", map[string]string{"being": label, "server": "las"})
		assert.True(t, ok, "%s: the restart counter is exported from its Las's start", label)
		assert.Zero(t, got, "%s restarts", label)
		got, _ = sample(fams, "singularity_cycles_total", being)
		assert.Equal(t, float64(st.Cycle), got, "%s cycles", label)
		assert.Equal(t, uint64(cycles), st.Cycle)
		var calls float64
		for k, want := range tools {
			got, ok := sample(fams, "singularity_tool_calls_total", map[string]string{"being": label, "surface": k[0], "status": k[1]})
			assert.True(t, ok, "%s has tool calls %v", label, k)
			assert.Equal(t, want, got, "%s tool calls %v", label, k)
			calls += want
		}
		got, _ = sample(fams, "singularity_tool_calls_total", being)
		assert.Equal(t, calls, got, "%s: no tool call counted that the journal does not hold", label)
	}
	got, _ := sample(fams, "singularity_completions_total", nil)
	assert.Equal(t, completions, got, "no completions of beings that are not on disk")
	got, _ = sample(fams, "singularity_beings", map[string]string{"status": state.StatusRunning})
	assert.Equal(t, float64(len(family)), got)
	h := fams["singularity_completion_duration_seconds"].GetMetric()[0].GetHistogram()
	assert.Equal(t, uint64(completions), h.GetSampleCount())
}
