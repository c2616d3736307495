package being_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	identitypkg "github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/metrics"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// benchRounds is the round limit of a benchmark cycle: every completion
// asks for tools, so each cycle is exactly benchRounds rounds and the
// per-cycle work (framing, the round-limit warning) is amortized over
// them.
const benchRounds = 8

// BenchmarkRound measures the runtime's own cost of one model round: a
// zero-latency Brama (the in-process test server, which verifies the
// signature and skims the body's shape rather than decoding every message,
// as a remote gateway costs the machine nothing) answers every request
// with one built-in memory call and one Las call (the example Las's
// echo__echo, a real child process), and the being runs them with every
// durable write of docs/state.md#the-journal: one journal step for the
// completion and one per tool, and per cycle of benchRounds rounds the
// framing, the round-limit warning and a checkpoint (archive and
// state.json). One op is one round; writes/round counts the durable
// writes. Allocations are the whole process's: the being, its ledger and
// Las actors, the gateway and its HTTP client, and the test server.
//
// BenchmarkRound/memory+memory is the same round with a second memory
// call in place of the Las call and no Las process: the runtime without
// the round trip to a child. BenchmarkRound/memory+las+observed is the
// same round with the family's observers on (docs/debug.md#metrics): the
// Prometheus metrics with the being label and the narrative log at info,
// formatted as text and discarded.
//
// The floors are the parts of a round that the runtime cannot do without,
// each alone, for comparison in the same run. A round waits for each of
// them in turn: its tools run only once its completion is durable, and
// its next request carries only what is durable.
//   - fsync-floor performs exactly the round's durable writes, with steps
//     of the same size.
//   - gateway-floor is the completion exchange with the same test server,
//     through the Brama client, for a request of the round's size.
//   - las-floor is the Las call written to the example Las's stdin and
//     read back, with nothing of the runtime in between.
func BenchmarkRound(b *testing.B) {
	b.Run("memory+las", func(b *testing.B) { benchmarkRound(b, true, nil) })
	b.Run("memory+memory", func(b *testing.B) { benchmarkRound(b, false, nil) })
	b.Run("memory+las+observed", func(b *testing.B) {
		log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
		benchmarkRound(b, true, observe.Tee(metrics.New(metrics.Options{PerBeing: true}), logging.NewNarrator(log)))
	})
	b.Run("fsync-floor", benchmarkFloor)
	b.Run("gateway-floor", benchmarkGatewayFloor)
	b.Run("las-floor", benchmarkLasFloor)
	b.Run("reservation", benchmarkReservation)
}

// benchmarkReservation is the part of a round that docs/money.md#no-overdraft
// adds, alone: bounding the request body of a window the size the round
// benchmark keeps (plus the system message) and reserving the worst case
// at the benchmark's prices.
func benchmarkReservation(b *testing.B) {
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: strings.Repeat("You are Ada, an autonomous digital being. ", 12)}}
	for i := range 4*benchRounds + 2 {
		msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: fmt.Sprintf("e%d", i), Name: "echo__echo",
			Content: `{"chat_id":null,"content":{"content":[{"type":"text","text":"{\"message\":\"hello\"}"}]},"error_code":null,"message_id":null,"status":"success"}`})
	}
	p := budget.Pricing{InputPerMillion: testkit.USD("0.15"), OutputPerMillion: testkit.USD("0.6")}
	remaining := testkit.USD("9.87")
	b.ReportAllocs()
	for b.Loop() {
		bound := chat.SizeBound(msgs) + 6000
		if _, ok := p.Reserve(bound, 2048, 256, 120*time.Second, remaining); !ok {
			b.Fatal("not affordable")
		}
	}
}

// benchmarkRound runs the round benchmark; the second call of every
// round goes to the example Las when withLas, else it is a second memory
// recall.
func benchmarkRound(b *testing.B, withLas bool, obs observe.Observer) {
	b.ReportAllocs()
	srv := bramatest.Start(b, bramatest.Config{Secret: []byte(testSecret), DiscardRequests: true, SkimRequests: true})
	var (
		mu       sync.Mutex
		served   int
		ready    = make(chan struct{})
		release  = make(chan struct{})
		finished = make(chan struct{})
	)
	second := bramatest.Call("", "singularity_memory_recall", `{"query":"hello"}`)
	if withLas {
		second = bramatest.Call("", "echo__echo", `{"message":"hello"}`)
	}
	calls := func(n int) []chat.ToolCall {
		then := second
		then.ID = fmt.Sprintf("e%d", n)
		return []chat.ToolCall{bramatest.Call(fmt.Sprintf("m%d", n), "singularity_memory_recall", `{"query":"market"}`), then}
	}
	largest := 0
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		served++
		n := served
		largest = max(largest, len(r.Body))
		mu.Unlock()
		switch n {
		case 1:
			close(ready)
			<-release
		case b.N + 1:
			close(finished)
		}
		return bramatest.ToolCallsReply(bramatest.Usage(120, 30), calls(n)...)
	})
	writes := &counting{}
	opts := options(b, being.Run)
	opts.StorageFault = writes.hook
	opts.Observer = obs
	if withLas {
		withExampleLas(b, &opts, `{}`)
	}
	opts.MaxToolRounds = benchRounds
	opts.ContextMessages = 4*benchRounds + 2
	opts.ShutdownGrace = 50 * time.Millisecond
	opts.Pricing.InputPerMillion = testkit.USD("0.15")
	opts.Pricing.OutputPerMillion = testkit.USD("0.6")
	h := start(b, srv, opts)
	select {
	case <-ready:
	case <-time.After(waitLimit):
		b.Fatal("the being never called Brama")
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	writes.mu.Lock()
	writesBefore := writes.writes[state.JournalFile] + writes.writes[state.StateFile] + writes.writes[state.ArchiveFile]
	writes.mu.Unlock()
	b.ResetTimer()
	began := time.Now()
	close(release)
	select {
	case <-finished:
	case <-time.After(10 * time.Minute):
		b.Fatal("the rounds did not finish")
	}
	elapsed := time.Since(began)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/round")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/round")
	writes.mu.Lock()
	writesAfter := writes.writes[state.JournalFile] + writes.writes[state.StateFile] + writes.writes[state.ArchiveFile]
	writes.mu.Unlock()
	b.ReportMetric(float64(writesAfter-writesBefore)/float64(b.N), "writes/round")
	h.shutdown()
	mu.Lock()
	b.ReportMetric(float64(largest), "request-bytes")
	mu.Unlock()
	events := h.journal()
	st := h.state()
	require.NoError(b, testkit.CheckInvariant(st.Budget, events))
	succeeded := func(e state.Event) bool { return e.Type == state.EventToolFinished && e.Status == "success" }
	if n := testkit.CountWhere(events, succeeded); n < 2*b.N {
		b.Fatalf("%d tool calls finished for %d rounds", n, b.N)
	}
}

// benchmarkFloor is the durable writes of the round benchmark alone:
// per round the completion's step and one step per tool, and per cycle
// of benchRounds rounds the framing, the warning and a checkpoint, each
// of the size the round benchmark writes.
func benchmarkFloor(b *testing.B) {
	b.ReportAllocs()
	dir := filepath.Join(b.TempDir(), "state")
	id := testkit.Identity()
	st := being.NewState(id, testkit.USD("10"), "test-model", state.Now())
	framing, cycle := floorConversation()
	st.Conversation = append(st.Conversation, framing)
	st.Conversation = append(st.Conversation, cycle...)
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	require.NoError(b, err)
	journal, err := store.OpenJournal(state.Now(), 0)
	require.NoError(b, err)
	defer journal.Close()
	archive, err := store.OpenArchive()
	require.NoError(b, err)
	defer archive.Close()
	data, err := state.Encode(st)
	require.NoError(b, err)
	api := testkit.USD("0.000036")
	at := state.Now()
	completion := []state.Event{
		state.ModelCompleted(at, 1, chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}, cycle[0]),
		state.Debited(at, 1, api, money.Zero, 150),
	}
	tool := func(m chat.Message) []state.Event {
		e := state.ToolFinished(at, 1, m.Name, "success")
		e.Chat = &m
		e.Action = &state.Action{Cycle: 1, Tool: m.Name, Status: "success", At: at}
		return []state.Event{e}
	}
	step := func(events []state.Event) {
		_, err := journal.AppendStep(events)
		require.NoError(b, err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%benchRounds == 0 {
			step([]state.Event{state.CycleStarted(at, 1, framing)})
		}
		step(completion)
		step(tool(cycle[1]))
		step(tool(cycle[2]))
		if i%benchRounds == benchRounds-1 {
			step([]state.Event{state.Warning(at, 1, "maximum tool rounds reached")})
			require.NoError(b, archive.Append(cycle...))
			require.NoError(b, store.WriteState(data))
		}
	}
	b.ReportMetric(float64(len(data)), "state-bytes")
}

// floorConversation is a conversation the size the round benchmark
// keeps: the framing and one cycle of benchRounds rounds.
func floorConversation() (framing chat.Message, cycle []chat.Message) {
	framing = chat.Message{Role: chat.RoleUser, Content: "Begin autonomous cycle 1. Balance: 9.99 USD. Earned: 0 USD. Net profit: -0.01 USD. Current model: test-model. Recent actions: echo__echo:success, singularity_memory_recall:success. Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."}
	for i := range benchRounds {
		cycle = append(cycle,
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
				bramatest.Call(fmt.Sprintf("m%d", i), "singularity_memory_recall", `{"query":"market"}`),
				bramatest.Call(fmt.Sprintf("e%d", i), "echo__echo", `{"message":"hello"}`),
			}},
			chat.Message{Role: chat.RoleTool, ToolCallID: fmt.Sprintf("m%d", i), Name: "singularity_memory_recall", Content: `{"chat_id":null,"content":{"memories":[]},"error_code":null,"message_id":null,"status":"success"}`},
			chat.Message{Role: chat.RoleTool, ToolCallID: fmt.Sprintf("e%d", i), Name: "echo__echo", Content: `{"chat_id":null,"content":{"content":[{"type":"text","text":"{\"message\":\"hello\"}"}],"structuredContent":{"message":"hello"}},"error_code":null,"message_id":null,"status":"success"}`},
		)
	}
	return framing, cycle
}

// benchmarkGatewayFloor is the completion exchange of the round
// benchmark alone: the Brama client encodes, signs and sends a request
// of the size of memory+memory's (the built-in catalogue, a system
// message and the conversation floorConversation keeps; the Las
// catalogue and results make memory+las's larger) to the same
// in-process test server, which verifies and skims it and answers with
// the round's two tool calls, and the client checks the answer. A round
// cannot cost less than this plus its durable writes (fsync-floor): its
// next request may carry only what is durable
// (docs/state.md#the-journal).
func benchmarkGatewayFloor(b *testing.B) {
	b.ReportAllocs()
	srv := bramatest.Start(b, bramatest.Config{Secret: []byte(testSecret), DiscardRequests: true, SkimRequests: true})
	largest := 0
	var mu sync.Mutex
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		largest = max(largest, len(r.Body))
		mu.Unlock()
		return bramatest.ToolCallsReply(bramatest.Usage(120, 30),
			bramatest.Call("m1", "singularity_memory_recall", `{"query":"market"}`),
			bramatest.Call("e1", "echo__echo", `{"message":"hello"}`))
	})
	client, err := brama.NewClient(brama.ClientConfig{BaseURL: srv.URL, Secret: identitypkg.NewSecret([]byte(testSecret)), Timeout: waitLimit})
	require.NoError(b, err)
	framing, cycle := floorConversation()
	var window state.Encoded
	for _, m := range append([]chat.Message{framing}, cycle...) {
		raw, err := json.Marshal(m)
		require.NoError(b, err)
		window = append(window, state.Pack(raw))
	}
	tools := builtin.Definitions()
	encodedTools, err := json.Marshal(tools)
	require.NoError(b, err)
	params := brama.Params{
		AgentID:      testkit.Identity().AgentID,
		Model:        "test-model",
		Messages:     []chat.Message{{Role: chat.RoleSystem, Content: strings.Repeat("You are Ada, an autonomous digital being. ", 54)}},
		Encoded:      window,
		Tools:        tools,
		ToolsEncoded: encodedTools,
		MaxTokens:    2048,
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := client.Complete(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	mu.Lock()
	b.ReportMetric(float64(largest), "request-bytes")
	mu.Unlock()
}

// benchmarkLasFloor is the round benchmark's Las call alone: one
// tools/call of echo__echo written to the example Las's stdin and
// its answer read from its stdout, after the handshake, with nothing of
// the runtime in between.
func benchmarkLasFloor(b *testing.B) {
	dir := b.TempDir()
	entry := filepath.Join(dir, "las.json")
	require.NoError(b, os.WriteFile(entry, []byte(`{}`), 0o600))
	cmd := exec.Command(testkit.ExampleLas(b), entry)
	cmd.Env = []string{}
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		// The example Las ends at the end of its input; one that does not
		// is killed.
		_ = stdin.Close()
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(waitLimit):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// The pipe's reads have a deadline, so a Las that stops answering
	// fails the benchmark instead of hanging it.
	pipe, ok := stdout.(*os.File)
	require.True(b, ok, "the Las's stdout is a pipe")
	lines := bufio.NewReader(pipe)
	// exchange writes one request and reads lines up to its answer.
	exchange := func(id int, method string, params any) {
		frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		require.NoError(b, err)
		require.NoError(b, pipe.SetReadDeadline(time.Now().Add(waitLimit)))
		_, err = stdin.Write(append(frame, '\n'))
		require.NoError(b, err)
		want := []byte(fmt.Sprintf(`"id":%d`, id))
		for {
			line, err := lines.ReadBytes('\n')
			require.NoError(b, err)
			if bytes.Contains(line, want) {
				if bytes.Contains(line, []byte(`"error"`)) {
					b.Fatalf("%s refused: %s", method, line)
				}
				return
			}
		}
	}
	exchange(0, mcpwire.MethodInitialize, mcpwire.NewInitializeParams("bench", testkit.Identity().AgentID))
	_, err = stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	require.NoError(b, err)
	call := map[string]any{"name": "echo__echo", "arguments": map[string]string{"message": "hello"}}
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		exchange(i, mcpwire.MethodToolsCall, call)
	}
}

// BenchmarkObservers is the observers' own cost for one round of
// BenchmarkRound, measured alone: the completion's step (model_completed
// and cost_debited), two tool steps and 3.5 durable writes, given to the
// metrics with the being label and to the narrative log at info
// (formatted as text and discarded). Compare it with BenchmarkRound's
// ns/round in the same run.
func BenchmarkObservers(b *testing.B) {
	b.ReportAllocs()
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	obs := observe.Tee(metrics.New(metrics.Options{PerBeing: true}), logging.NewNarrator(log))
	me := observe.Being{Name: "Ada", ID: "agent-test", AgentID: "agent-test"}
	at := state.Now()
	reply := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
		bramatest.Call("m", "singularity_memory_recall", `{"query":"market"}`),
		bramatest.Call("e", "echo__echo", `{"message":"hello"}`),
	}}
	completion := []state.Event{
		state.ModelCompleted(at, 1, chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}, reply),
		state.Debited(at, 1, testkit.USD("0.000036"), money.Zero, 150),
	}
	memory := []state.Event{state.ToolFinished(at, 1, "singularity_memory_recall", "success")}
	echo := []state.Event{state.ToolFinished(at, 1, "echo__echo", "success")}
	balance := testkit.USD("9.99")
	for i := 0; b.Loop(); i++ {
		obs.Step(observe.Step{Being: me, Events: completion, Status: "running", Balance: balance, Elapsed: time.Millisecond, Finish: "tool_calls"})
		obs.DurableWrite(200 * time.Microsecond)
		obs.Step(observe.Step{Being: me, Events: memory, Status: "running", Balance: balance, Elapsed: 50 * time.Microsecond})
		obs.DurableWrite(200 * time.Microsecond)
		obs.Step(observe.Step{Being: me, Events: echo, Status: "running", Balance: balance, Elapsed: 300 * time.Microsecond})
		obs.DurableWrite(200 * time.Microsecond)
		if i%2 == 0 {
			obs.DurableWrite(200 * time.Microsecond)
		}
	}
}
