package las

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/examplelas"
)

// TestMain fails the run on a leaked goroutine: protoactor's throttles
// aside (testkit.LeakOptions), tests send dead letters on purpose. Run
// as the scripted server of a conformance transcript, the binary plays
// that instead.
func TestMain(m *testing.M) {
	if serveConformance() {
		return
	}
	testkit.VerifyMain(m)
}

type whereIsLas struct{}

// testParent stands in for the being: it spawns Las under the Las
// supervision strategy and hands every event it receives to the test.
type testParent struct {
	props  *actor.Props
	events chan any
	las    *actor.PID
}

func (p *testParent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.las, _ = ctx.SpawnNamed(p.props, "las")
	case whereIsLas:
		ctx.Respond(p.las)
	case messages.LasRestarted, messages.LasCatalogChanged, messages.LasUnavailable, messages.LasSurfaceMissing, messages.LasWarning, *actor.Terminated:
		select {
		case p.events <- m:
		default:
			panic("test event buffer full")
		}
	}
}

type harness struct {
	t          testing.TB
	system     *actor.ActorSystem
	parent     *actor.PID
	las        *actor.PID
	events     chan any
	decisions  chan supervision.Event
	deliveries string
	stopped    bool
	restarts   int // LasRestarted events seen by gone
}

// captured is a slog handler that keeps every message, for assertions on
// what reaches the log.
type captured struct {
	mu       *sync.Mutex
	messages *[]string
}

func newCaptured() captured { return captured{mu: &sync.Mutex{}, messages: &[]string{}} }

func (c captured) Enabled(context.Context, slog.Level) bool { return true }
func (c captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.messages = append(*c.messages, r.Message)
	return nil
}
func (c captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c captured) WithGroup(string) slog.Handler      { return c }
func (c captured) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), *c.messages...)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// baseOptions runs the example Las with cfg (its deliveries file in a
// temporary directory) and short deadlines.
func baseOptions(t testing.TB, cfg *examplelas.Config) Options {
	dir := t.TempDir()
	if cfg.DeliveriesFile == "" {
		cfg.DeliveriesFile = filepath.Join(dir, "deliveries")
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	conf := filepath.Join(dir, "las.json")
	require.NoError(t, os.WriteFile(conf, b, 0o600))
	return Options{
		Command:          testkit.ExampleLas(t),
		Entrypoint:       conf,
		AgentID:          "agent-ada",
		RequiredSurfaces: []string{"skarbiec", "finance"},
		CallTimeout:      5 * time.Second,
		ShutdownGrace:    2 * time.Second,
		TermGrace:        time.Second,
		PingInterval:     -1,
		PingTimeout:      time.Second,
		BeingName:        "Ada",
		Logger:           quietLogger(),
		LookupEnv:        func(string) (string, bool) { return "", false },
	}
}

var fastBackoff = supervision.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}

func startWith(t testing.TB, opts Options, lasCfg supervision.LasConfig, deliveries string) *harness {
	t.Helper()
	h := &harness{t: t, events: make(chan any, 256), decisions: make(chan supervision.Event, 256), deliveries: deliveries}
	if lasCfg.Backoff == (supervision.Backoff{}) {
		lasCfg.Backoff = fastBackoff
	}
	lasCfg.Notify = func(_ *actor.ActorSystem, ev supervision.Event) { h.decisions <- ev }
	h.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLogger() }))
	props := actor.PropsFromProducer(func() actor.Actor { return &testParent{props: Props(opts), events: h.events} },
		actor.WithSupervisor(supervision.ForLas(lasCfg)))
	var err error
	h.parent, err = h.system.Root.SpawnNamed(props, "being-ada")
	require.NoError(t, err)
	res, err := h.system.Root.RequestFuture(h.parent, whereIsLas{}, 5*time.Second).Result()
	require.NoError(t, err)
	h.las = res.(*actor.PID)
	t.Cleanup(h.stop)
	return h
}

func start(t testing.TB, cfg examplelas.Config, tweak func(*Options)) *harness {
	t.Helper()
	opts := baseOptions(t, &cfg)
	if tweak != nil {
		tweak(&opts)
	}
	return startWith(t, opts, supervision.LasConfig{}, cfg.DeliveriesFile)
}

func (h *harness) stop() {
	if h.stopped {
		return
	}
	h.stopped = true
	_ = h.system.Root.StopFuture(h.parent).Wait()
	h.system.Shutdown()
}

func (h *harness) call(tool, args string, deadline time.Duration) outcome.Outcome {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.las, messages.LasCallRequest{
		Tool: tool, Arguments: json.RawMessage(args), Deadline: time.Now().Add(deadline),
	}, deadline+10*time.Second).Result()
	require.NoError(h.t, err, "call %s", tool)
	return res.(messages.LasCallResponse).Outcome
}

func (h *harness) catalog() messages.LasCatalogResponse {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.las, messages.LasCatalogRequest{}, 20*time.Second).Result()
	require.NoError(h.t, err)
	return res.(messages.LasCatalogResponse)
}

func (h *harness) describe() messages.Description {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.las, messages.DescribeRequest{}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(messages.Description)
}

// next waits for the next parent event of type T, skipping others.
func next[T any](h *harness, within time.Duration) T {
	h.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case ev := <-h.events:
			if v, ok := ev.(T); ok {
				return v
			}
		case <-deadline.C:
			var zero T
			h.t.Fatalf("no %T within %v", zero, within)
			return zero
		}
	}
}

// gone waits for both signs that Las has stopped for good, in whichever
// order they come (the Terminated system message may overtake the
// LasUnavailable the actor sent while stopping), and returns the latter.
func (h *harness) gone() messages.LasUnavailable {
	h.t.Helper()
	var gone *messages.LasUnavailable
	terminated := false
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for gone == nil || !terminated {
		select {
		case ev := <-h.events:
			switch v := ev.(type) {
			case messages.LasUnavailable:
				gone = &v
			case *actor.Terminated:
				terminated = true
			case messages.LasRestarted:
				h.restarts++
			}
		case <-deadline.C:
			h.t.Fatalf("Las did not stop for good (unavailable=%v terminated=%v)", gone != nil, terminated)
		}
	}
	return *gone
}

// assertUnavailable checks what a being sees after Las has stopped for
// good: asks fail at once instead of waiting.
func (h *harness) assertUnavailable() {
	h.t.Helper()
	_, err := h.system.Root.RequestFuture(h.las, messages.LasCatalogRequest{}, 5*time.Second).Result()
	require.ErrorIs(h.t, err, actor.ErrDeadLetter)
}

// drain returns the events received so far without waiting.
func (h *harness) drain() []any {
	var out []any
	for {
		select {
		case ev := <-h.events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func (h *harness) lines() []string {
	h.t.Helper()
	b, err := os.ReadFile(h.deliveries)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (h *harness) count(line string) int {
	n := 0
	for _, l := range h.lines() {
		if l == line {
			n++
		}
	}
	return n
}

// actorTerminated names the Terminated event for next[…].
type actorTerminated = actor.Terminated

func content(t testing.TB, o outcome.Outcome) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(o.Content, &m))
	return m
}
