package being_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// benchRounds is the round limit of a benchmark cycle: every completion
// asks for tools, so each cycle is exactly benchRounds rounds and the
// per-cycle work (framing, the round-limit warning) is amortized over
// them.
const benchRounds = 8

// BenchmarkRound measures the runtime's own cost of one model round: a
// zero-latency Brama (the in-process test server) answers every request with
// one built-in memory call and one Las call (the example Las's echo__echo, a
// real child process), and the being runs them with every durable write of
// docs/cycle.md#anatomy-of-a-cycle (model_completed, cost_debited and two
// tool_finished appends, three atomic saves). One op is one round.
// Allocations are the whole process's: the being, its ledger and Las actors,
// the gateway and its HTTP client, and the test server.
//
// BenchmarkRound/fsync-floor performs only the durable writes a round
// needs (four journal appends, three saves of a state the size the
// round benchmark keeps), for comparison in the same run.
func BenchmarkRound(b *testing.B) {
	b.Run("memory+las", benchmarkRound)
	b.Run("fsync-floor", benchmarkFloor)
}

func benchmarkRound(b *testing.B) {
	b.ReportAllocs()
	srv := bramatest.Start(b, bramatest.Config{Secret: []byte(testSecret), DiscardRequests: true})
	var (
		mu       sync.Mutex
		served   int
		ready    = make(chan struct{})
		release  = make(chan struct{})
		finished = make(chan struct{})
	)
	calls := func(n int) []chat.ToolCall {
		return []chat.ToolCall{
			bramatest.Call(fmt.Sprintf("m%d", n), "singularity_memory_recall", `{"query":"market"}`),
			bramatest.Call(fmt.Sprintf("e%d", n), "echo__echo", `{"message":"hello"}`),
		}
	}
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		mu.Lock()
		served++
		n := served
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
	opts := options(b, being.Run)
	withExampleLas(b, &opts, `{}`)
	opts.MaxToolRounds = benchRounds
	opts.ContextMessages = 4*benchRounds + 2
	opts.ShutdownGrace = 50 * time.Millisecond
	opts.Pricing.InputPerMillion = money.MustParse("0.15")
	opts.Pricing.OutputPerMillion = money.MustParse("0.6")
	h := start(b, srv, opts)
	select {
	case <-ready:
	case <-time.After(waitLimit):
		b.Fatal("the being never called Brama")
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
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
	h.shutdown()
	events := h.journal()
	st := h.state()
	require.NoError(b, state.CheckInvariant(st.Budget, events))
	succeeded := func(e state.Event) bool { return e.Type == state.EventToolFinished && e.Status == "success" }
	if n := testkit.CountWhere(events, succeeded); n < 2*b.N {
		b.Fatalf("%d tool calls finished for %d rounds", n, b.N)
	}
}

// benchmarkFloor is the durable writes of one round alone.
func benchmarkFloor(b *testing.B) {
	b.ReportAllocs()
	dir := filepath.Join(b.TempDir(), "state")
	id := testkit.Identity()
	st := being.NewState(id, money.MustParse("10"), "test-model", state.Now())
	// A conversation the size the round benchmark keeps: one cycle of
	// benchRounds rounds.
	st.Conversation = append(st.Conversation, chat.Message{Role: chat.RoleUser, Content: "Begin autonomous cycle 1. Balance: 9.99 USD. Earned: 0 USD. Net profit: -0.01 USD. Current model: test-model. Recent actions: echo__echo:success, singularity_memory_recall:success. Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."})
	for i := range benchRounds {
		st.Conversation = append(st.Conversation,
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
				bramatest.Call(fmt.Sprintf("m%d", i), "singularity_memory_recall", `{"query":"market"}`),
				bramatest.Call(fmt.Sprintf("e%d", i), "echo__echo", `{"message":"hello"}`),
			}},
			chat.Message{Role: chat.RoleTool, ToolCallID: fmt.Sprintf("m%d", i), Name: "singularity_memory_recall", Content: `{"chat_id":null,"content":{"memories":[]},"error_code":null,"message_id":null,"status":"success"}`},
			chat.Message{Role: chat.RoleTool, ToolCallID: fmt.Sprintf("e%d", i), Name: "echo__echo", Content: `{"chat_id":null,"content":{"content":[{"type":"text","text":"{\"message\":\"hello\"}"}],"structuredContent":{"message":"hello"}},"error_code":null,"message_id":null,"status":"success"}`},
		)
	}
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	require.NoError(b, err)
	journal, err := store.OpenJournal(state.Now(), 0)
	require.NoError(b, err)
	defer journal.Close()
	data, err := state.Encode(st)
	require.NoError(b, err)
	amount := money.MustParse("0.000036")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		at := state.Now()
		require.NoError(b, journal.Append(state.ModelCompleted(at, 1, chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150})))
		require.NoError(b, journal.Append(state.CostDebited(at, 1, amount)))
		require.NoError(b, store.Save(st))
		for range 2 {
			require.NoError(b, journal.Append(state.ToolFinished(at, 1, "echo__echo", "success")))
			require.NoError(b, store.Save(st))
		}
	}
	b.ReportMetric(float64(len(data)), "state-bytes")
}
