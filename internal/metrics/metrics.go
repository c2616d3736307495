// Package metrics is the family's Prometheus registry
// (docs/debug.md#metrics): the counters, gauges and histograms of SPEC
// §16.1, fed by the beings through observe.Observer and served by the
// debug endpoint at GET /metrics in the text exposition format.
//
// Every count is taken from a durable journal step (observe.Step), so the
// counters agree with the journals exactly: completions, tokens and cached
// prompt tokens from model_completed, cost from cost_debited, revenue from
// revenue_credited, grants from endowment_granted, tool calls from
// tool_finished. Money is exported as float samples for observation only;
// the ledger stays exact.
//
// The completion, token and cost series carry the model the completion
// was billed at, among the models Options.Models names (the prices file's
// and the configured one); any other is "other", so the number of series
// stays bounded whatever the gateway answers.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// Options configure the metrics of one family.
type Options struct {
	// PerBeing labels the per-being series with "being"
	// (<name>-<first 8 of id>). False (SINGULARITY_METRICS_PER_BEING=false)
	// drops that label, so a family of thousands exports a fixed number
	// of series; the sums stay the same.
	PerBeing bool
	// Process adds the Go runtime and process collectors (go_*,
	// process_*). False leaves them out (tests that compare exact sets).
	Process bool
	// Models are the values the "model" label may take besides
	// OtherModel: the models of BRAMA_PRICES_FILE and BRAMA_MODEL. Nil
	// labels every completion OtherModel.
	Models []string
	// Member, when set, labels every series "member" with it: the
	// member of a family across processes (docs/cluster.md) that serves
	// them.
	Member string
}

// OtherModel is the "model" label of a completion billed at a model that
// Options.Models does not name.
const OtherModel = "other"

// Metrics is the registry and its series. It implements
// observe.Observer and is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	// to is where series are registered: reg, or reg with the member
	// label on every series.
	to       prometheus.Registerer
	perBeing bool

	completions *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	cached      *prometheus.CounterVec
	cost        *prometheus.CounterVec
	revenue     *prometheus.CounterVec
	funded      *prometheus.CounterVec
	granted     *prometheus.CounterVec
	warnings    *prometheus.CounterVec
	balance     *prometheus.GaugeVec
	tier        *prometheus.GaugeVec // nil without the being label
	cycles      *prometheus.CounterVec
	toolCalls   *prometheus.CounterVec
	toolTime    *prometheus.HistogramVec
	modelTime   prometheus.Histogram
	restarts    *prometheus.CounterVec
	beings      *prometheus.GaugeVec
	fsync       prometheus.Histogram

	models map[string]bool // the model label values besides OtherModel

	mu     sync.Mutex
	byID   map[string]*series // resolved per-being series, by agent id
	status map[string]string  // each being's last status, by agent id
	last   map[string]float64 // each being's last balance (without the being label)
	// toolTimes are the resolved tool duration histograms by surface.
	toolTimes map[string]prometheus.Observer
}

// series are one being's fixed series, resolved once.
type series struct {
	label        string
	earned, gave prometheus.Counter
	funded       prometheus.Counter
	warned       prometheus.Counter
	balance      prometheus.Gauge
	tier         prometheus.Gauge // nil without the being label
	// last is the balance last set (seen: there is one); finish, models
	// and tools hold the resolved completion, per-model and tool-call
	// counters by label values. All guarded by Metrics.mu.
	last   money.Amount
	seen   bool
	finish map[[2]string]prometheus.Counter
	models map[string]*modelSeries
	tools  map[[2]string]prometheus.Counter
}

// modelSeries are one being's token and cost series for one model label.
type modelSeries struct {
	prompt, completion, cached prometheus.Counter
	api, instance              prometheus.Counter
}

var _ observe.Observer = (*Metrics)(nil)

// Histogram buckets, in seconds.
var (
	completionBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	toolBuckets       = []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 120}
	fsyncBuckets      = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .05, .1, .5, 1}
)

// New returns the metrics of a family with every series registered.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(), perBeing: opts.PerBeing, models: map[string]bool{},
		byID: map[string]*series{}, status: map[string]string{}, toolTimes: map[string]prometheus.Observer{},
	}
	m.to = m.reg
	if opts.Member != "" {
		m.to = prometheus.WrapRegistererWith(prometheus.Labels{"member": opts.Member}, m.reg)
	}
	for _, model := range opts.Models {
		m.models[model] = true
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, m.labels(labels...))
	}
	m.completions = counter("singularity_completions_total", "Model completions journaled, by finish reason and model.", "finish", "model")
	m.tokens = counter("singularity_tokens_total", "Tokens of journaled completions, by kind (prompt, completion) and model.", "kind", "model")
	m.cached = counter("singularity_prompt_cached_tokens_total", "Prompt tokens of journaled completions that the provider served from its cache (a part of the prompt tokens), by model.", "model")
	m.cost = counter("singularity_cost_usd_total", "Debited cost in USD, by part (api, instance) and model; a float for observation, the ledger is exact.", "part", "model")
	m.revenue = counter("singularity_revenue_usd_total", "Revenue credited from trusted evidence, in USD.")
	m.funded = counter("singularity_funded_usd_total", "Money the operator added from outside the family (singularity fund), in USD.")
	m.granted = counter("singularity_granted_usd_total", "Endowments granted to children, in USD.")
	m.warnings = counter("singularity_warnings_total", "Warnings journaled.")
	m.balance = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "singularity_balance_usd", Help: "Remaining balance in USD after the last durable step (summed over beings without the being label)."}, m.labels())
	m.cycles = counter("singularity_cycles_total", "Cycles ended, by status (completed, tool_round_limit, budget_exhausted, failed).", "status")
	m.toolCalls = counter("singularity_tool_calls_total", "Tool calls journaled, by surface (a Las prefix, builtin or most) and outcome status.", "surface", "status")
	m.toolTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "singularity_tool_duration_seconds", Help: "Tool call duration, from the call to its outcome.", Buckets: toolBuckets}, []string{"surface"})
	m.modelTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "singularity_completion_duration_seconds", Help: "Completion duration as the gateway measured it.", Buckets: completionBuckets})
	m.restarts = counter("singularity_las_restarts_total", "Restarts of a being's MCP servers.", "server")
	m.beings = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "singularity_beings", Help: "Beings of the family by status."}, []string{"status"})
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "singularity_storage_fsync_seconds", Help: "Duration of one durable write (a journal step or a checkpoint, each ending in fsync).", Buckets: fsyncBuckets})
	m.to.MustRegister(m.completions, m.tokens, m.cached, m.cost, m.revenue, m.funded, m.granted, m.warnings, m.balance,
		m.cycles, m.toolCalls, m.toolTime, m.modelTime, m.restarts, m.beings, m.fsync)
	if m.perBeing {
		m.tier = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "singularity_survival_tier", Help: "The survival tier each being lives in (its position in SINGULARITY_TIERS_FILE; 0 for none)."}, m.labels())
		m.to.MustRegister(m.tier)
	}
	if opts.Process {
		m.to.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// labels puts "being" first when the series are per being.
func (m *Metrics) labels(others ...string) []string {
	if !m.perBeing {
		return others
	}
	return append([]string{"being"}, others...)
}

// Registry is the registry the series live in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// values are the label values of a per-being series: the being's label
// first when series are per being.
func (m *Metrics) values(label string, others ...string) []string {
	if !m.perBeing {
		return others
	}
	return append([]string{label}, others...)
}

// of returns b's resolved series, making them on first sight.
func (m *Metrics) of(b observe.Being) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[b.ID]; ok {
		return s
	}
	label := b.Label()
	v := func(others ...string) []string { return m.values(label, others...) }
	s := &series{
		label:  label,
		earned: m.revenue.WithLabelValues(v()...),
		funded: m.funded.WithLabelValues(v()...),
		gave:   m.granted.WithLabelValues(v()...),
		warned: m.warnings.WithLabelValues(v()...),
		finish: map[[2]string]prometheus.Counter{},
		models: map[string]*modelSeries{},
		tools:  map[[2]string]prometheus.Counter{},
	}
	if m.perBeing {
		s.balance = m.balance.WithLabelValues(label)
		s.tier = m.tier.WithLabelValues(label)
	}
	m.byID[b.ID] = s
	return s
}

// modelLabel is the "model" label of a completion billed at model.
func (m *Metrics) modelLabel(model string) string {
	if m.models[model] {
		return model
	}
	return OtherModel
}

// ofModel returns s's series for a model label, making them on first
// sight.
func (m *Metrics) ofModel(s *series, model string) *modelSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ms, ok := s.models[model]; ok {
		return ms
	}
	v := func(others ...string) []string { return m.values(s.label, others...) }
	ms := &modelSeries{
		prompt:     m.tokens.WithLabelValues(v("prompt", model)...),
		completion: m.tokens.WithLabelValues(v("completion", model)...),
		cached:     m.cached.WithLabelValues(v(model)...),
		api:        m.cost.WithLabelValues(v("api", model)...),
		instance:   m.cost.WithLabelValues(v("instance", model)...),
	}
	s.models[model] = ms
	return ms
}

// Step counts a durable step's events.
func (m *Metrics) Step(st observe.Step) {
	s := m.of(st.Being)
	if s.tier != nil {
		s.tier.Set(float64(st.Tier))
	}
	model := m.modelLabel(st.Model)
	for i := range st.Events {
		e := &st.Events[i]
		switch e.Type {
		case state.EventModelCompleted:
			m.completed(s, st.Finish, model).Inc()
			ms := m.ofModel(s, model)
			ms.prompt.Add(float64(e.Usage.PromptTokens))
			ms.completion.Add(float64(e.Usage.CompletionTokens))
			ms.cached.Add(float64(e.Usage.CachedTokens))
			m.modelTime.Observe(st.Elapsed.Seconds())
		case state.EventCostDebited:
			ms := m.ofModel(s, model)
			addUSD(ms.api, e.API)
			addUSD(ms.instance, e.Instance)
		case state.EventRevenueCredited:
			addUSD(s.earned, e.Amount)
		case state.EventFunded:
			addUSD(s.funded, e.Amount)
		case observe.EventEndowmentGranted:
			addUSD(s.gave, e.Amount)
		case state.EventWarning:
			s.warned.Inc()
		case state.EventToolFinished:
			surface := observe.Surface(e.Tool)
			m.called(s, surface, e.Status).Inc()
			m.toolTimer(surface).Observe(st.Elapsed.Seconds())
		}
	}
	m.setBalance(st.Being.ID, s, st.Balance)
	m.setStatus(st.Being.ID, st.Status)
}

// addUSD adds a non-zero amount to c.
func addUSD(c prometheus.Counter, a money.Amount) {
	if a.Sign() != 0 {
		c.Add(usd(a))
	}
}

// completed is s's completion counter for a finish reason and a model
// label.
func (m *Metrics) completed(s *series, finish, model string) prometheus.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{finish, model}
	c, ok := s.finish[key]
	if !ok {
		c = m.completions.WithLabelValues(m.values(s.label, finish, model)...)
		s.finish[key] = c
	}
	return c
}

// called is s's tool-call counter for a surface and status.
func (m *Metrics) called(s *series, surface, status string) prometheus.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{surface, status}
	c, ok := s.tools[key]
	if !ok {
		c = m.toolCalls.WithLabelValues(m.values(s.label, surface, status)...)
		s.tools[key] = c
	}
	return c
}

// toolTimer is the tool duration histogram of a surface.
func (m *Metrics) toolTimer(surface string) prometheus.Observer {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.toolTimes[surface]
	if !ok {
		h = m.toolTime.WithLabelValues(surface)
		m.toolTimes[surface] = h
	}
	return h
}

// setBalance sets the being's balance; without the being label the
// gauge is the family's sum, kept as the sum of the last balances.
func (m *Metrics) setBalance(id string, s *series, b money.Amount) {
	m.mu.Lock()
	same := s.seen && s.last.Equal(b)
	s.last, s.seen = b, true
	m.mu.Unlock()
	if same {
		return // most steps leave the balance as it was
	}
	if m.perBeing {
		s.balance.Set(usd(b))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]float64{}
	}
	v := usd(b)
	m.balance.WithLabelValues().Add(v - m.last[id])
	m.last[id] = v
}

// setStatus moves the being between the status gauges.
func (m *Metrics) setStatus(id, status string) {
	if status == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, seen := m.status[id]
	if seen && old == status {
		return
	}
	if seen {
		m.beings.WithLabelValues(old).Dec()
	}
	m.beings.WithLabelValues(status).Inc()
	m.status[id] = status
}

// CycleEnded counts an ended cycle by status.
func (m *Metrics) CycleEnded(b observe.Being, _ uint64, status string) {
	m.cycles.WithLabelValues(m.values(m.of(b).label, status)...).Inc()
}

// LasRestarted counts a restart of one of b's MCP servers.
func (m *Metrics) LasRestarted(b observe.Being, server string) {
	m.restarts.WithLabelValues(m.values(m.of(b).label, server)...).Inc()
}

// DurableWrite observes one durable write.
func (m *Metrics) DurableWrite(d time.Duration) { m.fsync.Observe(d.Seconds()) }

// usd is an amount as a float sample.
func usd(a money.Amount) float64 {
	f, _ := a.Rat().Float64()
	return f
}
