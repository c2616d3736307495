package family_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// scaleLife is how many cycles every being lives before the figures of
// BenchmarkFamilyScale are taken: enough for the default window of 200
// messages to fill (a cycle adds four) and stay full.
const scaleLife = 100

// scaleLifeLimit bounds the life before the figures: 10,000 beings
// living 100 cycles are two million rounds, about an hour on two cores.
const scaleLifeLimit = 4 * time.Hour

// scaleWindow is the default conversation window
// (SINGULARITY_CONTEXT_MESSAGES).
const scaleWindow = 200

// scaleSizes are the family sizes of BenchmarkFamilyScale;
// SCALE_BEINGS (a comma-separated list) picks others, and SCALE_LIFE a
// shorter life than scaleLife.
var scaleSizes = []int{10, 100, 1000, 10000}

// BenchmarkFamilyScale measures K beings living concurrently in one process
// (docs/differences.md#measured-targets, family scale) at the default
// window of 200 messages: built-in tools only (no Las), one shared brama
// gateway against a zero-latency Brama on loopback that answers every
// cycle with one recall call and then a plain reply, and the family's
// writer pool. Every round is the real thing: a signed HTTP completion, a
// durable step (journal append, fsynced), a tool call and its step, a
// checkpoint at every cycle end.
//
// Every being first lives scaleLife cycles; then the figures are taken
// (after a GC): heap-B/being is HeapInuse less HeapInuse before any being
// was spawned, over K; heap-max-B/being is the largest such figure of the
// samples taken (after a GC too) each time every being completed another
// ten cycles from cycle 50 on, and of the one after the life, so that
// what is in flight at one instant cannot flatter it; rss-B/being is the
// whole process's resident set over K; threads is the process's OS
// thread count. One op is then one
// model round of any being, and rounds/s the family's throughput with
// every being cycling. The K beings are started once per sub-benchmark
// and keep cycling between its runs.
//
// For a look inside: SCALE_PROGRESS appends the figures at every tenth
// cycle of the life to a file, SCALE_HEAPPROFILE writes heap profiles
// (after the life, and .cycle<n> at each tenth cycle), and
// SCALE_MEMPROFILERATE sets their sampling rate.
func BenchmarkFamilyScale(b *testing.B) {
	sizes := scaleSizes
	if env := os.Getenv("SCALE_BEINGS"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 {
				b.Fatalf("SCALE_BEINGS: %q is not a number of beings", f)
			}
			sizes = append(sizes, k)
		}
	}
	if env := os.Getenv("SCALE_MEMPROFILERATE"); env != "" {
		// SCALE_HEAPPROFILE's sampling rate (1 records every
		// allocation: slow, but exact for a small family).
		runtime.MemProfileRate, _ = strconv.Atoi(env)
	}
	life := scaleLife
	if env := os.Getenv("SCALE_LIFE"); env != "" {
		// A shorter life for a quick look; the figures of record live
		// scaleLife cycles.
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			b.Fatalf("SCALE_LIFE: %q is not a number of cycles", env)
		}
		life = n
	}
	for _, k := range sizes {
		var sw *scaleWorld
		dir := scaleDir(b)
		b.Run(fmt.Sprintf("beings=%d", k), func(b *testing.B) {
			if sw == nil {
				sw = startScale(b, scaleConfig{beings: k, life: life, window: scaleWindow, dir: dir})
			}
			sw.rounds(b)
			b.ReportMetric(float64(sw.figures.heap)/float64(k), "heap-B/being")
			b.ReportMetric(float64(sw.figures.heapMax)/float64(k), "heap-max-B/being")
			b.ReportMetric(float64(sw.figures.rss)/float64(k), "rss-B/being")
			b.ReportMetric(float64(sw.figures.threads), "threads")
		})
		if sw != nil {
			sw.stop(b)
		}
	}
}

// rounds times b.N rounds of the living family and reports rounds/s.
func (sw *scaleWorld) rounds(b *testing.B) {
	done := sw.brama.after(b.N)
	b.ResetTimer()
	start := time.Now()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d rounds not done in time", b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rounds/s")
}

// scaleDir is a fresh directory for one family's states: under
// SCALE_DIR when it is set (make bench-scale puts it on a tmpfs, so that
// a life of a million rounds is not a million fsyncs of a shared disk),
// else the benchmark's temporary directory.
func scaleDir(b *testing.B) string {
	root := os.Getenv("SCALE_DIR")
	if root == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(root, "family-scale-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// memDir is a fresh directory on a tmpfs (/dev/shm) where there is one,
// else the test's temporary directory: a test of thousands of beings is
// about the process, not about the shared disk's fsyncs.
func memDir(t *testing.T) string {
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "family-scale-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// zeroBrama answers at once, counts the rounds it answered and the
// cycles each being completed.
type zeroBrama struct {
	srv *bramatest.Server

	mu      sync.Mutex
	rounds  int
	target  int
	reached chan struct{}
	// cycles counts each being's completed cycles (by its name in the
	// framing, see answer); lived is closed once every one of want
	// beings completed life cycles.
	cycles map[string]int
	life   int
	full   int
	want   int
	lived  chan struct{}
	// tenths counts, for every tenth cycle, the beings that completed
	// it; milestone gets the cycle once all of them did.
	tenths    map[int]int
	milestone chan int
	// sleep answers every round with a sleep (scaleConfig.sleep).
	sleep bool
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
// second ends the cycle. The being is told apart by the name in its
// system prompt's first line (every being of a family signs with the
// root's agent id).
func (z *zeroBrama) answer(r *bramatest.Request) bramatest.Reply {
	ends := r.Skim.LastRole == chat.RoleTool || z.sleep
	z.mu.Lock()
	z.rounds++
	if z.reached != nil && z.rounds >= z.target {
		close(z.reached)
		z.reached = nil
	}
	if ends {
		who := strings.Clone(firstLine(r.Skim.First)) // not the whole prompt
		z.cycles[who]++
		if n := z.cycles[who]; n%10 == 0 && z.milestone != nil {
			z.tenths[n]++
			if z.tenths[n] == z.want {
				select {
				case z.milestone <- n:
				default:
				}
			}
		}
		if z.cycles[who] == z.life {
			z.full++
			if z.full == z.want {
				close(z.lived)
			}
		}
	}
	z.mu.Unlock()
	if z.sleep {
		return bramatest.ToolCallsReply(bramatest.Usage(400, 20),
			bramatest.Call("call_1", builtin.SelfSleep, fmt.Sprintf(`{"seconds":%d}`, int(sleepFor.Seconds()))))
	}
	if ends {
		return bramatest.TextReply("done", bramatest.Usage(400, 5))
	}
	return bramatest.ToolCallsReply(bramatest.Usage(400, 20),
		bramatest.Call("call_1", builtin.MemoryRecall, `{"query":"price"}`))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// scaleConfig is one scale world: how many beings, how many cycles each
// lives before the figures, the window and the
// directory their states live in.
type scaleConfig struct {
	beings int
	life   int
	window int
	dir    string
	// hold, when set, fences every being's steps as a member holding
	// the family does (docs/cluster.md#placement): one lock, a commit
	// record each, the member's batcher.
	hold being.Placement
	// sleep gives the beings the family tools and answers each cycle's
	// first round with a sleep of sleepFor (a cycle of one round); clock
	// is the beings' clock (nil: the wall's).
	sleep bool
	clock supervision.Clock
}

// sleepFor is how long the beings of a sleeping scale world sleep.
const sleepFor = time.Hour

// scaleFigures are what a scale world measured after the life.
type scaleFigures struct {
	heap    uint64 // HeapInuse less before, all beings
	rss     uint64 // the process's resident set
	threads int    // the process's OS threads
	// heapMax is the largest heap of the samples taken every ten cycles
	// from cycle sampleFrom on, and of the one after the life: what is
	// in flight at one instant cannot flatter it.
	heapMax uint64
}

// sampleFrom is the first cycle whose heap is sampled for heapMax: the
// window (200 messages, four a cycle) is full by then.
const sampleFrom = 50

// scaleWorld is K beings under one parent with one gateway.
type scaleWorld struct {
	system     *actor.ActorSystem
	parent     *actor.PID
	brama      *zeroBrama
	writers    *state.Writers
	stopped    chan struct{}
	k          int
	dirs       []string
	heapBefore uint64 // HeapInuse before any being was spawned
	figures    scaleFigures
}

// measure takes the figures now, after a GC, and writes the heap
// profile to profile when it is not empty.
func (sw *scaleWorld) measure(profile string) scaleFigures {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	f := scaleFigures{}
	if m.HeapInuse > sw.heapBefore {
		f.heap = m.HeapInuse - sw.heapBefore
	}
	f.rss, f.threads = procStatus()
	if profile != "" {
		// The live heap just measured, for go tool pprof (the profile
		// lags a cycle behind: one more GC makes it that heap).
		runtime.GC()
		if out, err := os.Create(profile); err == nil {
			_ = pprof.Lookup("heap").WriteTo(out, 0)
			out.Close()
		}
	}
	return f
}

// procStatus reads the process's resident set (bytes) and OS thread
// count from /proc/self/status (0 where it cannot be read).
func procStatus() (rss uint64, threads int) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(fields[0], 10, 64)
		switch key {
		case "VmRSS":
			rss = n * 1024
		case "Threads":
			threads = int(n)
		}
	}
	return rss, threads
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

// startScale starts the world and returns once every being has lived
// cfg.life cycles, with the figures taken then.
func startScale(tb testing.TB, cfg scaleConfig) *scaleWorld {
	tb.Helper()
	k := cfg.beings
	secret := []byte("scale-benchmark-secret")
	z := &zeroBrama{cycles: map[string]int{}, life: cfg.life, want: k, lived: make(chan struct{}),
		tenths: map[int]int{}, milestone: make(chan int, 1), sleep: cfg.sleep}
	z.srv = bramatest.New(bramatest.Config{Secret: secret, DiscardRequests: true, SkimRequests: true, Handler: z.answer})
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: z.srv.URL, Secret: identity.NewSecret(secret), Timeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}

	balance := testkit.USD("1000000")
	workspace := filepath.Join(cfg.dir, "workspace")
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		tb.Fatal(err)
	}
	writers := state.NewWriters(0)
	opts := make([]being.Options, k)
	dirs := make([]string, k)
	for i := range opts {
		id := testkit.Identity()
		id.Name = fmt.Sprintf("S%d", i)
		stateDir := filepath.Join(cfg.dir, id.Name)
		dirs[i] = stateDir
		if _, _, _, err := state.Boot(stateDir, false, id, func() (*state.Being, error) {
			st := being.NewState(id, balance, "test-model", state.Now())
			// The first line tells the Brama which being asks.
			st.Mind.SystemPrompt = id.Name + "\n" + st.Mind.SystemPrompt
			return st, nil
		}); err != nil {
			tb.Fatal(err)
		}
		opts[i] = being.Options{
			StateDir: stateDir, Identity: id, Mode: being.Run, Model: "test-model",
			Pricing: budget.Pricing{
				InputPerMillion: testkit.USD("0.15"), OutputPerMillion: testkit.USD("0.6"),
				InstancePerHour: testkit.USD("0.36"),
			},
			StartingBalance: balance, Workspace: workspace, MaxToolRounds: 4, ContextMessages: cfg.window,
			ModelTimeout: 2 * time.Minute, ShutdownGrace: 30 * time.Second, Writers: writers,
			FamilyTools: cfg.sleep, Clock: cfg.clock,
		}
	}

	runtime.GC()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	gw, err := system.Root.SpawnNamed(brama.Props(brama.GatewayConfig{Client: client}), "brama")
	if err != nil {
		tb.Fatal(err)
	}
	for i := range opts {
		opts[i].Gateway = gw
	}
	sw := &scaleWorld{system: system, brama: z, writers: writers, stopped: make(chan struct{}), k: k, dirs: dirs, heapBefore: before.HeapInuse}
	if cfg.hold != nil {
		for i := range opts {
			opts[i].Placement = cfg.hold
		}
	}
	failed := make(chan messages.BeingStopped, 1)
	parent := &scaleParent{beings: opts, stopped: sw.stopped, failed: failed}
	sw.parent, err = system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return parent }), "family")
	if err != nil {
		tb.Fatal(err)
	}
	// Every tenth cycle of the life the heap is sampled (heapMax) and,
	// with SCALE_PROGRESS, the figures so far are written, one line
	// each, for a life too long to wait for.
	sampled := make(chan uint64, 1)
	go sw.progress(os.Getenv("SCALE_PROGRESS"), k, sampled)
	select {
	case <-z.lived:
	case f := <-failed:
		tb.Fatalf("being %s stopped by itself: %s %v", f.Name, f.Status, f.Err)
	case <-time.After(scaleLifeLimit):
		tb.Fatalf("not all %d beings lived %d cycles in time", k, cfg.life)
	}
	heapMax := <-sampled
	sw.figures = sw.measure(os.Getenv("SCALE_HEAPPROFILE"))
	sw.figures.heapMax = max(heapMax, sw.figures.heap)
	return sw
}

// progress measures the figures each time every being completed another
// ten cycles, until the life is over, and appends them to path (unless it
// is empty); it then sends the largest heap of the samples from cycle
// sampleFrom on.
func (sw *scaleWorld) progress(path string, k int, sampled chan<- uint64) {
	var heapMax uint64
	for {
		select {
		case n := <-sw.brama.milestone:
			// The heap profile of every milestone too (SCALE_HEAPPROFILE
			// with .cycle<n>), to tell what grows with age (pprof -base).
			profile := ""
			if p := os.Getenv("SCALE_HEAPPROFILE"); p != "" {
				profile = fmt.Sprintf("%s.cycle%d", p, n)
			}
			f := sw.measure(profile)
			if n >= sampleFrom {
				heapMax = max(heapMax, f.heap)
			}
			if path == "" {
				continue
			}
			line := fmt.Sprintf("%s beings=%d cycles=%d heap-B/being=%d rss-B/being=%d threads=%d goroutines=%d\n",
				time.Now().UTC().Format(time.TimeOnly), k, n, f.heap/uint64(k), f.rss/uint64(k), f.threads, runtime.NumGoroutine())
			if out, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				_, _ = out.WriteString(line)
				out.Close()
			}
		case <-sw.brama.lived:
			sampled <- heapMax
			return
		}
	}
}

// stop stops every being gracefully, then the system, the pool and the
// Brama.
func (sw *scaleWorld) stop(tb testing.TB) {
	sw.system.Root.Send(sw.parent, stopAll{})
	select {
	case <-sw.stopped:
	case <-time.After(10 * time.Minute):
		tb.Errorf("the beings did not stop in time")
	}
	sw.system.Shutdown()
	sw.writers.Close()
	sw.brama.srv.Close()
}

// TestTwoThousandBeings is the family scale in the normal suite
// (docs/family.md#families-of-thousands): 2,000 beings in one process, built-in tools only,
// a small window and a short life. Every being completes its cycles,
// the process stays under 200 OS threads, and once they stopped every
// being's books and their sum are exact.
func TestTwoThousandBeings(t *testing.T) {
	const beings, life = 2000, 1
	dir := memDir(t)
	sw := startScale(t, scaleConfig{beings: beings, life: life, window: 8, dir: dir})
	assert.Less(t, sw.figures.threads, 200, "OS threads with %d beings cycling", beings)
	sw.stop(t)

	var entries []accounts.Entry
	for _, d := range sw.dirs {
		fam, err := accounts.Read(d)
		require.NoError(t, err)
		require.Len(t, fam.Beings, 1)
		b := fam.Beings[0]
		require.GreaterOrEqual(t, b.State.Cycle, uint64(life), "%s cycled", b.Name)
		require.Equal(t, state.StatusStopped, b.State.Status, b.Name)
		require.True(t, b.Entry.Off().IsZero(), "%s is off by %s", b.Name, b.Entry.Off())
		entries = append(entries, b.Entry)
	}
	var totals accounts.Totals
	for _, e := range entries {
		totals.Add(e)
	}
	assert.Equal(t, beings, totals.Beings)
	assert.True(t, totals.Exact(), "the family is off by %s", totals.Off)
	assert.Positive(t, totals.Spent.Sign(), "the beings paid for their rounds")
}

// BenchmarkActorCost measures what protoactor itself costs per actor (its
// mailbox, context, PID and registry entry, the props), the floor under
// a being's own figures: K idle actors of an empty receive, spawned
// named under one parent, with and without a supervisor strategy of
// their own. heap-B/actor is HeapInuse after spawning less before, over K.
func BenchmarkActorCost(b *testing.B) {
	const k = 10000
	for _, tc := range []struct {
		name  string
		props func() *actor.Props
	}{
		{"plain", func() *actor.Props { return actor.PropsFromFunc(func(actor.Context) {}) }},
		{"supervised", func() *actor.Props {
			return actor.PropsFromFunc(func(actor.Context) {}, actor.WithSupervisor(actor.NewOneForOneStrategy(10, time.Second, actor.DefaultDecider)))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				pids := make([]*actor.PID, k)
				for i := range pids {
					pid, err := system.Root.SpawnNamed(tc.props(), fmt.Sprintf("family/being-%d", i))
					if err != nil {
						b.Fatal(err)
					}
					pids[i] = pid
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/k, "heap-B/actor")
				for _, pid := range pids {
					system.Root.Stop(pid)
				}
				system.Shutdown()
			}
		})
	}
}

// BenchmarkFamilyStatus is what `singularity status` does over a family
// of 10,000 beings (docs/family.md#families-of-thousands): accounts.Read of a root that endowed 100
// children, each of which endowed 99, every one a state.json and a
// journal. status-ms is one read of the whole family. With SCALE_KEEP
// set the family is left in SCALE_DIR for the command itself.
func BenchmarkFamilyStatus(b *testing.B) {
	const fanout, grand = 100, 99
	root := scaleDir(b)
	if os.Getenv("SCALE_KEEP") != "" {
		dir, err := os.MkdirTemp(os.Getenv("SCALE_DIR"), "family-status-")
		if err != nil {
			b.Fatal(err)
		}
		root = dir
		b.Logf("family kept in %s", root)
	}
	id := testkit.Identity()
	at := state.Now()
	g1, g2 := testkit.USD("1000"), testkit.USD("10")
	create := func(dir string, st *state.Being) {
		store, err := state.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Create(st); err != nil {
			b.Fatal(err)
		}
		j, err := store.OpenJournal(at, 0)
		if err != nil {
			b.Fatal(err)
		}
		j.Close()
	}
	child := func(parent string, n int, name string, grant money.Amount) (state.Child, string) {
		c := state.Child{ID: fmt.Sprintf("c-%s-%d", name, n), Name: name, Ticker: "T", CreatedAt: at, Status: state.StatusStarting, Endowment: &grant}
		return c, filepath.Join(parent, "children", c.ID)
	}
	rootSt := being.NewState(id, testkit.USD("1000000"), "test-model", at)
	for i := range fanout {
		c, dir := child(root, i, fmt.Sprintf("C%d", i), g1)
		rootSt.Mind.Children = append(rootSt.Mind.Children, c)
		cid := id
		cid.Name = c.Name
		st := being.NewState(cid, g1, "test-model", at)
		for k := range grand {
			gc, gdir := child(dir, k, fmt.Sprintf("C%d-%d", i, k), g2)
			st.Mind.Children = append(st.Mind.Children, gc)
			gid := id
			gid.Name = gc.Name
			create(gdir, being.NewState(gid, g2, "test-model", at))
		}
		granted := g2.Mul(testkit.USD(strconv.Itoa(grand)))
		st.Budget.Granted, st.Budget.Remaining = granted, g1.Sub(granted)
		create(dir, st)
	}
	granted := g1.Mul(testkit.USD(strconv.Itoa(fanout)))
	rootSt.Budget.Granted, rootSt.Budget.Remaining = granted, rootSt.Budget.Starting.Sub(granted)
	create(root, rootSt)

	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		fam, err := accounts.Read(root)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "status-ms")
		if len(fam.Beings) != 1+fanout*(1+grand) || !fam.Totals.Exact() {
			b.Fatalf("%d beings, family off by %s", len(fam.Beings), fam.Totals.Off)
		}
	}
}
