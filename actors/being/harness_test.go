package being_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/las"
	identitypkg "github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

const (
	testSecret = "being-test-hmac-secret"
	// waitLimit bounds every wait on the family; nothing here should come
	// near it.
	waitLimit = 30 * time.Second
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// options returns root-being options for a fresh state directory under
// t's temp dir: built-in tools only, zero prices, no interval.
func options(t testing.TB, mode being.Mode) being.Options {
	t.Helper()
	dir := t.TempDir()
	return being.Options{
		StateDir:        filepath.Join(dir, "state"),
		Identity:        testkit.Identity(),
		Mode:            mode,
		Model:           "test-model",
		StartingBalance: testkit.USD("10"),
		Workspace:       t.TempDir(),
		MaxToolRounds:   8,
		ContextMessages: 200,
		ModelTimeout:    waitLimit,
		MCPTimeout:      10 * time.Second,
		ShutdownGrace:   2 * time.Second,
		Logger:          quiet,
	}
}

// withExampleLas gives the being the example Las (a real child process)
// configured by cfg.
func withExampleLas(t testing.TB, opts *being.Options, cfg string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "las.json")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	opts.Las = &las.Options{
		Command:       testkit.ExampleLas(t),
		Entrypoint:    path,
		CallTimeout:   opts.MCPTimeout,
		ShutdownGrace: 2 * time.Second,
		PingInterval:  -1,
		Logger:        quiet,
	}
}

// harness is a family (gateway + root being) living in-process against a
// test Brama.
type harness struct {
	t      testing.TB
	opts   being.Options
	brama  *bramatest.Server
	system *actor.ActorSystem
	family *actor.PID
	events <-chan any
}

// newBrama starts a test Brama sharing the harness's secret.
func newBrama(t testing.TB) *bramatest.Server {
	return bramatest.Start(t, bramatest.Config{Secret: []byte(testSecret)})
}

// start boots the root's state directory with a fresh being and spawns
// the family.
func start(t testing.TB, srv *bramatest.Server, opts being.Options, mods ...func(*family.Options)) *harness {
	t.Helper()
	return startWith(t, srv, opts, being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now()), mods...)
}

// startWith boots the root's state directory with st (as a crashed or
// earlier life left it) and spawns the family.
func startWith(t testing.TB, srv *bramatest.Server, opts being.Options, st *state.Being, mods ...func(*family.Options)) *harness {
	t.Helper()
	_, _, _, err := state.Boot(opts.StateDir, false, opts.Identity, func() (*state.Being, error) { return st, nil })
	require.NoError(t, err)
	return resume(t, srv, opts, mods...)
}

// resume spawns the family on the root's existing state directory, as
// `--resume` does.
func resume(t testing.TB, srv *bramatest.Server, opts being.Options, mods ...func(*family.Options)) *harness {
	t.Helper()
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: srv.URL, Secret: identitypkg.NewSecret([]byte(testSecret)), Timeout: waitLimit})
	require.NoError(t, err)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	listener, events, stopListener := family.Listen(system)
	t.Cleanup(stopListener)
	fo := family.Options{
		Gateway:  brama.GatewayConfig{Client: client, Temperature: 0.2, ShutdownGrace: time.Second, Logger: quiet},
		Root:     opts,
		Listener: listener,
		Logger:   quiet,
	}
	for _, mod := range mods {
		mod(&fo)
	}
	pid, err := system.Root.SpawnNamed(family.Props(fo), "family")
	require.NoError(t, err)
	h := &harness{t: t, opts: opts, brama: srv, system: system, family: pid, events: events}
	t.Cleanup(system.Shutdown)
	return h
}

// report waits for the root's next cycle report.
func (h *harness) report() messages.CycleReport {
	h.t.Helper()
	for {
		select {
		case ev := <-h.events:
			switch msg := ev.(type) {
			case messages.CycleReport:
				return msg
			case messages.FamilyStopped:
				h.t.Fatalf("family stopped before a cycle report: %v %v", msg.Status, msg.Err)
			}
		case <-time.After(waitLimit):
			h.t.Fatal("no cycle report in time")
		}
	}
}

// reportFor waits for the report of cycle n, skipping earlier ones.
func (h *harness) reportFor(n uint64) messages.CycleReport {
	h.t.Helper()
	for {
		if r := h.report(); r.Cycle >= n {
			return r
		}
	}
}

// shutdown asks the family to stop and waits for its last word.
func (h *harness) shutdown() messages.FamilyStopped {
	h.t.Helper()
	h.system.Root.Send(h.family, messages.ShutdownFamily{})
	return h.stopped()
}

// stopped waits for FamilyStopped.
func (h *harness) stopped() messages.FamilyStopped {
	h.t.Helper()
	return h.stoppedWithin(waitLimit)
}

// stoppedWithin waits up to limit for FamilyStopped.
func (h *harness) stoppedWithin(limit time.Duration) messages.FamilyStopped {
	h.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case ev := <-h.events:
			if msg, ok := ev.(messages.FamilyStopped); ok {
				return msg
			}
		case <-deadline:
			h.t.Fatal("the family did not stop in time")
		}
	}
}

// barrier returns once the family and then the root being have handled
// every message sent to them before it: each answers a describe request
// only after what is ahead of it in its mailbox, and the family forwards
// to the root before answering.
func (h *harness) barrier() {
	h.t.Helper()
	_, err := h.system.Root.RequestFuture(h.family, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(h.t, err)
	root := h.system.NewLocalPID("family/" + family.RootName)
	_, err = h.system.Root.RequestFuture(root, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(h.t, err)
}

func (h *harness) state() *state.Being {
	h.t.Helper()
	b, err := state.Load(h.opts.StateDir)
	require.NoError(h.t, err)
	return b
}

func (h *harness) journal() []state.Event {
	h.t.Helper()
	return testkit.Journal(h.t, h.opts.StateDir)
}

// archive reads conversation.jsonl.
func (h *harness) archive() []chat.Message {
	h.t.Helper()
	f, err := os.Open(filepath.Join(h.opts.StateDir, "conversation.jsonl"))
	require.NoError(h.t, err)
	defer f.Close()
	var out []chat.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m chat.Message
		require.NoError(h.t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	require.NoError(h.t, sc.Err())
	return out
}

func (h *harness) fileText(name string) string {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.opts.StateDir, name))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(h.t, err)
	return string(data)
}

func warnings(events []state.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == state.EventWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

// lastMessage is the newest message of a recorded completion request.
func lastMessage(r *bramatest.Request) chat.Message {
	msgs := r.Completion.Messages
	return msgs[len(msgs)-1]
}
