package family_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/metrics"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/simbrama"
)

// longWait bounds every wait on the family. The machine is shared and
// slow under -race; a healthy family meets each condition in seconds.
const longWait = 90 * time.Second

// progress records, from the completion requests that reach Brama, the
// highest cycle each being (by name) has framed. Waiters are woken on
// every request, so conditions are re-checked on events, never on a
// timer.
type progress struct {
	mu      sync.Mutex
	cycles  map[string]uint64
	changed chan struct{}
	// hold, when set, makes the completions of the being holdName wait
	// until it is closed; held hears of each one held.
	holdName string
	hold     chan struct{}
	held     chan struct{}
}

// holdBeing makes name's completion requests wait until release is
// called (once or more); the returned channel hears of each request
// held.
func (p *progress) holdBeing(name string) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdName, p.hold, p.held = name, make(chan struct{}), make(chan struct{}, 16)
	gate := p.hold
	var once sync.Once
	return p.held, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.holdName = ""
			close(gate)
		})
	}
}

// gate returns the channel name's request must wait for, if any.
func (p *progress) gate(name string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name == "" || name != p.holdName {
		return nil
	}
	select {
	case p.held <- struct{}{}:
	default:
	}
	return p.hold
}

func newProgress() *progress {
	return &progress{cycles: map[string]uint64{}, changed: make(chan struct{})}
}

// see reads the being's name (initial system prompt) and cycle (last
// framing message) from a completion request body, and returns the name.
func (p *progress) see(body []byte) string {
	var req struct {
		Messages []chat.Message `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	name, cycle := "", uint64(0)
	for _, m := range req.Messages {
		if m.Role == chat.RoleSystem && name == "" {
			if rest, ok := strings.CutPrefix(m.Content, "You are "); ok {
				name, _, _ = strings.Cut(rest, ", an autonomous digital being")
			}
		}
		if m.Role == chat.RoleUser {
			if rest, ok := strings.CutPrefix(m.Content, "Begin autonomous cycle "); ok {
				digits, _, _ := strings.Cut(rest, ".")
				if n, err := strconv.ParseUint(digits, 10, 64); err == nil {
					cycle = n
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cycle > p.cycles[name] {
		p.cycles[name] = cycle
	}
	close(p.changed)
	p.changed = make(chan struct{})
	return name
}

func (p *progress) snapshot() (map[string]uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]uint64, len(p.cycles))
	for k, v := range p.cycles {
		out[k] = v
	}
	return out, p.changed
}

// until re-checks cond after every completion request until it holds or
// longWait passes.
func (p *progress) until(t *testing.T, what string, cond func(map[string]uint64) bool) map[string]uint64 {
	t.Helper()
	deadline := time.NewTimer(longWait)
	defer deadline.Stop()
	for {
		seen, changed := p.snapshot()
		if cond(seen) {
			return seen
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; cycles seen: %v", what, seen)
		}
	}
}

// observing passes every request on unchanged (its signature covers the
// body) and shows completion bodies to progress first.
type observing struct {
	next http.RoundTripper
	p    *progress
}

func (o observing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return o.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if gate := o.p.gate(o.p.see(body)); gate != nil {
		select {
		case <-gate:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	clone := req.Clone(req.Context())
	clone.Body = io.NopCloser(bytes.NewReader(body))
	clone.ContentLength = int64(len(body))
	return o.next.RoundTrip(clone)
}

// world is a family living in a test actor system against the demo's
// simulated Brama and the example Las as real child processes.
type world struct {
	t        testing.TB
	dir      string // the root being's state directory
	system   *actor.ActorSystem
	family   *actor.PID
	events   <-chan any
	progress *progress
	debugURL string
	brama    *simbrama.Server
	stopped  *messages.FamilyStopped
}

// worldConfig says how to start a world.
type worldConfig struct {
	dir    string // root state directory; created fresh unless resume
	resume bool
	noLas  bool // built-in tools only
	// observer and maxCycles go to the root being's options (children
	// inherit them); metrics, when set, is served at /metrics.
	observer  observe.Observer
	maxCycles uint64
	metrics   *metrics.Metrics
	// prices, when set, is the prices file's table of the gateway and
	// of the simulated Brama's bill; cacheKey sends each being's id as
	// prompt_cache_key (BRAMA_PROMPT_CACHE_KEY).
	prices   prices.Table
	cacheKey bool
	// single lives the root alone: the simulated Brama scripts no
	// spawn. layout, window, balance and interval, when set, replace
	// the root's prompt layout, conversation window (80), starting
	// balance (1 USD) and cycle interval (20 ms; negative for none).
	single   bool
	layout   prompt.Layout
	window   int
	balance  money.Amount
	interval time.Duration
}

// startWorld boots the root's state and spawns the family. Everything is
// torn down at cleanup.
func startWorld(t testing.TB, cfg worldConfig) *world {
	t.Helper()
	lasBin := testkit.ExampleLas(t)

	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	secretHex := []byte(hex.EncodeToString(secret))
	pricing := budget.Pricing{
		InputPerMillion:  testkit.USD("0.15"),
		OutputPerMillion: testkit.USD("0.6"),
		InstancePerHour:  testkit.USD("0.36"),
	}
	script := simbrama.Options{RootName: "Ada", GrandchildParent: "Bo", Prices: cfg.prices, Price: pricing.Tokens()}
	if cfg.single {
		script.RootName, script.GrandchildParent = "", ""
	}
	sim, err := simbrama.Start(secretHex, script)
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })

	prog := newProgress()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 16
	client, err := brama.NewClient(brama.ClientConfig{
		BaseURL: sim.URL(), Secret: identity.NewSecret(secretHex), Timeout: 30 * time.Second,
		Transport: observing{next: transport, p: prog}, PromptCacheKey: cfg.cacheKey,
	})
	require.NoError(t, err)

	id := testkit.Identity()
	balance := testkit.USD("1")
	if !cfg.balance.IsZero() {
		balance = cfg.balance
	}
	_, _, resumed, err := state.Boot(cfg.dir, cfg.resume, id, func() (*state.Being, error) {
		return being.NewState(id, balance, "any", state.Now()), nil
	})
	require.NoError(t, err)
	require.Equal(t, cfg.resume, resumed)

	workspace := filepath.Join(filepath.Dir(cfg.dir), "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o700))
	only := "echo,skarbiec,finance"
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	root := being.Options{
		StateDir:        cfg.dir,
		Identity:        id,
		Mode:            being.Run,
		Model:           "any",
		Pricing:         pricing,
		Prices:          prices.Book{File: cfg.prices},
		StartingBalance: balance,
		Workspace:       workspace,
		MaxToolRounds:   8,
		ContextMessages: 80,
		CycleInterval:   20 * time.Millisecond,
		ModelTimeout:    40 * time.Second,
		MCPTimeout:      30 * time.Second,
		ShutdownGrace:   5 * time.Second,
		Las: &las.Options{
			Command:          lasBin,
			Only:             &only,
			AgentID:          id.AgentID,
			RequiredSurfaces: []string{"skarbiec", "finance"},
			CallTimeout:      30 * time.Second,
			ShutdownGrace:    2 * time.Second,
			PingInterval:     -1,
			Logger:           log,
		},
		FaultInjection: true,
		Logger:         log,
	}
	if cfg.noLas {
		root.Las = nil
	}
	root.Observer = cfg.observer
	root.MaxCycles = cfg.maxCycles
	root.PromptLayout = cfg.layout
	if cfg.window > 0 {
		root.ContextMessages = cfg.window
	}
	switch {
	case cfg.interval < 0:
		root.CycleInterval = 0
	case cfg.interval > 0:
		root.CycleInterval = cfg.interval
	}

	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	listener, events, stopListener := family.Listen(system)
	t.Cleanup(stopListener)
	pid, err := system.Root.SpawnNamed(family.Props(family.Options{
		Gateway:  brama.GatewayConfig{Client: client, MaxTokens: 2048, Temperature: 0.2, ShutdownGrace: 5 * time.Second, Prices: prices.Book{File: cfg.prices}, Logger: log},
		Root:     root,
		Listener: listener,
		Logger:   log,
	}), "family")
	require.NoError(t, err)

	hc := debug.HandlerConfig{Root: system.Root, PID: pid, Deadline: 5 * time.Second, StateDir: cfg.dir}
	if cfg.metrics != nil {
		hc.Metrics = cfg.metrics.Handler()
	}
	srv := httptest.NewServer(debug.Handler(hc))
	w := &world{t: t, dir: cfg.dir, system: system, family: pid, events: events, progress: prog, debugURL: srv.URL, brama: sim}
	t.Cleanup(func() {
		srv.Close()
		if w.stopped == nil {
			w.shutdown()
		}
		system.Shutdown()
		// A connection dialed but never used would hold the simulated
		// Brama's graceful close for its 5 s idle rule.
		transport.CloseIdleConnections()
	})
	return w
}

// shutdown asks the family to stop, children first, and waits for its
// last word.
func (w *world) shutdown() messages.FamilyStopped {
	w.t.Helper()
	w.system.Root.Send(w.family, messages.ShutdownFamily{})
	deadline := time.NewTimer(longWait)
	defer deadline.Stop()
	for {
		select {
		case ev := <-w.events:
			if s, ok := ev.(messages.FamilyStopped); ok {
				w.stopped = &s
				return s
			}
		case <-deadline.C:
			w.stopped = &messages.FamilyStopped{Status: "timeout"}
			w.t.Fatal("the family did not stop in time")
		}
	}
}

// tree is the debug endpoint's JSON tree, decoded.
type tree struct {
	PID      string         `json:"pid"`
	Kind     string         `json:"kind"`
	Name     string         `json:"name"`
	Status   string         `json:"status"`
	Children []tree         `json:"children"`
	Figures  map[string]any `json:"-"`
}

func (n *tree) UnmarshalJSON(data []byte) error {
	type plain tree
	if err := json.Unmarshal(data, (*plain)(n)); err != nil {
		return err
	}
	return json.Unmarshal(data, &n.Figures)
}

// get fetches one debug route.
func (w *world) get(path string) []byte {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.debugURL+path, nil)
	require.NoError(w.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(w.t, err)
	require.Equal(w.t, http.StatusOK, resp.StatusCode, string(body))
	return body
}

// actors returns the live tree from GET /debug/actors.
func (w *world) actors() tree {
	w.t.Helper()
	var n tree
	require.NoError(w.t, json.Unmarshal(w.get("/debug/actors"), &n))
	return n
}

// treeUntil re-reads the tree after every completion request until cond
// holds or longWait passes.
func (w *world) treeUntil(what string, cond func(tree) bool) tree {
	w.t.Helper()
	deadline := time.NewTimer(longWait)
	defer deadline.Stop()
	for {
		_, changed := w.progress.snapshot()
		n := w.actors()
		if cond(n) {
			return n
		}
		select {
		case <-changed:
		case <-deadline.C:
			raw, _ := json.MarshalIndent(n, "", "  ")
			w.t.Fatalf("timed out waiting for %s; tree:\n%s", what, raw)
		}
	}
}

// beingNode finds the being named name anywhere in the tree.
func (n tree) beingNode(name string) (tree, bool) {
	if n.Kind == "being" && n.Name == name {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := c.beingNode(name); ok {
			return f, true
		}
	}
	return tree{}, false
}

// child returns the first direct child of the given kind.
func (n tree) child(kind string) (tree, bool) {
	for _, c := range n.Children {
		if c.Kind == kind {
			return c, true
		}
	}
	return tree{}, false
}

// number reads a numeric figure.
func (n tree) number(key string) float64 {
	v, _ := n.Figures[key].(float64)
	return v
}

// text reads a string figure.
func (n tree) text(key string) string {
	v, _ := n.Figures[key].(string)
	return v
}

// pidOf turns a node's pid text back into a PID of the world's system.
func (w *world) pidOf(n tree) *actor.PID {
	return actor.NewPID(w.system.Address(), n.PID)
}
