package family_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// BenchmarkFamilyScale measures K beings living concurrently in one process
// (docs/differences.md#measured-targets, family scale): built-in tools only
// (no Las), one shared brama gateway against a zero-latency Brama on loopback
// that answers every cycle with one recall call and then a plain reply. Every
// round is the real thing: a signed HTTP completion, a durable debit (journal
// appends and an atomic state save, fsynced), a tool call and its save.
//
// One op is one model round of any being; rounds/s is the family's
// throughput. heap-B/being is HeapInuse after every being has asked for
// its first completion, less HeapInuse before any was spawned, over K;
// heap-B/being-after is the same measured after the timed rounds, when
// conversations have grown toward their window.
// The K beings are started once per sub-benchmark and keep cycling
// between its runs.
func BenchmarkFamilyScale(b *testing.B) {
	for _, k := range []int{10, 100, 1000} {
		var sw *scaleWorld
		dir := b.TempDir()
		b.Run(fmt.Sprintf("beings=%d", k), func(b *testing.B) {
			if sw == nil {
				sw = startScale(b, k, dir)
			}
			b.ReportAllocs()
			done := sw.brama.after(b.N)
			b.ResetTimer()
			start := time.Now()
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("%d rounds not done in time", b.N)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rounds/s")
			b.ReportMetric(float64(sw.heapPerBeing), "heap-B/being")
			b.ReportMetric(float64(sw.heapNow()), "heap-B/being-after")
		})
		if sw != nil {
			sw.stop(b)
		}
	}
}

// zeroBrama answers at once and counts the rounds it answered.
type zeroBrama struct {
	srv *bramatest.Server

	mu      sync.Mutex
	rounds  int
	target  int
	reached chan struct{}
	agents  map[string]bool
	want    int
	running chan struct{}
}

// after returns a channel closed once n more rounds have been answered.
func (z *zeroBrama) after(n int) <-chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.target = z.rounds + n
	z.reached = make(chan struct{})
	return z.reached
}

// answer is the policy: a cycle's first round recalls a memory, the
// second ends the cycle.
func (z *zeroBrama) answer(r *bramatest.Request) bramatest.Reply {
	agent := r.Header.Get("X-Agent-Id")
	z.mu.Lock()
	z.rounds++
	if z.reached != nil && z.rounds >= z.target {
		close(z.reached)
		z.reached = nil
	}
	if !z.agents[agent] {
		z.agents[agent] = true
		if len(z.agents) == z.want {
			close(z.running)
		}
	}
	z.mu.Unlock()
	msgs := r.Completion.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == chat.RoleTool {
		return bramatest.TextReply("done", bramatest.Usage(400, 5))
	}
	return bramatest.ToolCallsReply(bramatest.Usage(400, 20),
		bramatest.Call("call_1", builtin.MemoryRecall, `{"query":"price"}`))
}

// scaleWorld is K beings under one parent with one gateway.
type scaleWorld struct {
	system       *actor.ActorSystem
	parent       *actor.PID
	brama        *zeroBrama
	stopped      chan struct{}
	k            int
	heapBefore   uint64 // HeapInuse before any being was spawned
	heapPerBeing uint64
}

// heapNow is HeapInuse now, less heapBefore, over K.
func (sw *scaleWorld) heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapInuse < sw.heapBefore {
		return 0
	}
	return (m.HeapInuse - sw.heapBefore) / uint64(sw.k)
}

// scaleParent spawns the beings, stops them on request and reports when
// every one has stopped.
type scaleParent struct {
	beings   []being.Options
	pids     []*actor.PID
	left     int
	stopping bool
	stopped  chan struct{}
	failed   chan<- messages.BeingStopped // a being that ended by itself
}

type stopAll struct{}

func (p *scaleParent) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		for i, opts := range p.beings {
			pid, err := ctx.SpawnNamed(being.Props(opts), fmt.Sprintf("being-%d", i))
			if err != nil {
				panic(err)
			}
			p.pids = append(p.pids, pid)
		}
		p.left = len(p.pids)
	case stopAll:
		p.stopping = true
		for _, pid := range p.pids {
			ctx.Send(pid, messages.StopBeing{})
		}
	case messages.BeingStopped:
		if !p.stopping {
			select {
			case p.failed <- msg:
			default:
			}
		}
		p.left--
		if p.left == 0 {
			close(p.stopped)
		}
	}
}

func startScale(b *testing.B, k int, dir string) *scaleWorld {
	b.Helper()
	secret := []byte("scale-benchmark-secret")
	z := &zeroBrama{agents: map[string]bool{}, want: k, running: make(chan struct{})}
	z.srv = bramatest.New(bramatest.Config{Secret: secret, DiscardRequests: true, Handler: z.answer})
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: z.srv.URL, Secret: identity.NewSecret(secret), Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}

	balance := money.MustParse("1000000")
	workspace := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		b.Fatal(err)
	}
	opts := make([]being.Options, k)
	for i := range opts {
		id := testkit.Identity()
		id.AgentID = fmt.Sprintf("scale-%d", i)
		id.Name = fmt.Sprintf("S%d", i)
		stateDir := filepath.Join(dir, id.Name)
		if _, _, _, err := state.Boot(stateDir, false, id, func() (*state.Being, error) {
			return being.NewState(id, balance, "test-model", state.Now()), nil
		}); err != nil {
			b.Fatal(err)
		}
		opts[i] = being.Options{
			StateDir: stateDir, Identity: id, Mode: being.Run, Model: "test-model",
			Pricing: ledger.Pricing{
				InputPerMillion: money.MustParse("0.15"), OutputPerMillion: money.MustParse("0.6"),
				InstancePerHour: money.MustParse("0.36"),
			},
			StartingBalance: balance, Workspace: workspace, MaxToolRounds: 4, ContextMessages: 40,
			ModelTimeout: 2 * time.Minute, ShutdownGrace: 30 * time.Second,
		}
	}

	runtime.GC()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	gw, err := system.Root.SpawnNamed(brama.Props(brama.GatewayConfig{Client: client}), "brama")
	if err != nil {
		b.Fatal(err)
	}
	for i := range opts {
		opts[i].Gateway = gw
	}
	sw := &scaleWorld{system: system, brama: z, stopped: make(chan struct{}), k: k, heapBefore: before.HeapInuse}
	failed := make(chan messages.BeingStopped, 1)
	parent := &scaleParent{beings: opts, stopped: sw.stopped, failed: failed}
	sw.parent, err = system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return parent }), "family")
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-z.running:
	case f := <-failed:
		b.Fatalf("being %s stopped by itself: %s %v", f.Name, f.Status, f.Err)
	case <-time.After(5 * time.Minute):
		b.Fatalf("not all %d beings came alive in time", k)
	}
	sw.heapPerBeing = sw.heapNow()
	return sw
}

// stop stops every being gracefully, then the system and the Brama.
func (sw *scaleWorld) stop(b *testing.B) {
	sw.system.Root.Send(sw.parent, stopAll{})
	select {
	case <-sw.stopped:
	case <-time.After(5 * time.Minute):
		b.Errorf("the beings did not stop in time")
	}
	sw.system.Shutdown()
	sw.brama.srv.Close()
}
