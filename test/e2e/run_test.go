package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

const waitLimit = 60 * time.Second

func cyclesStarted(n int) func([]state.Event) bool {
	return func(events []state.Event) bool { return testkit.Count(events, state.EventCycleStarted) >= n }
}

func last(events []state.Event) state.Event { return events[len(events)-1] }

// TestRunStopsOnSignal: run lives cycle after cycle until Ctrl-C (or
// SIGTERM), then stops gracefully: status stopped, journal ends with
// stopped, exit 0.
func TestRunStopsOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testRunStopsOn(t, sig)
		})
	}
}

func testRunStopsOn(t *testing.T, sig os.Signal) {
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(100, 10))
	p := w.start("run")
	w.waitJournal(waitLimit, "three cycles", cyclesStarted(3))
	p.signal(sig)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout)

	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	events := w.journal()
	assert.Equal(t, state.EventStarted, events[0].Type)
	end := last(events)
	assert.Equal(t, state.EventStopped, end.Type)
	assert.Equal(t, state.StatusStopped, end.Status)
	assert.Equal(t, st.Cycle, end.Cycle)
	assert.GreaterOrEqual(t, st.Cycle, uint64(3))
	assert.Zero(t, testkit.Count(events, state.EventWarning), "a clean run journals no warning")
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// overdraftWorld prices one full completion at about 0.0027 USD against
// a starting balance of 0.004 (docs/money.md#no-overdraft): 1000 prompt
// tokens at 0.01 USD and up to 2600 completion tokens at 1 USD per
// million. The gateway answers within max_tokens unless ignoreMax.
func overdraftWorld(t *testing.T, ignoreMax bool, calls func(n int) []chat.ToolCall) *world {
	w := newWorld(t, `{}`)
	w.env["SINGULARITY_STARTING_BALANCE_USD"] = "0.004"
	w.env["BRAMA_INPUT_PRICE_USD_PER_MILLION"] = "0.01"
	w.env["BRAMA_OUTPUT_PRICE_USD_PER_MILLION"] = "1"
	w.env["BRAMA_MAX_TOKENS"] = "4096"
	var mu sync.Mutex
	n := 0
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		completion := uint64(2600)
		if !ignoreMax {
			completion = min(completion, uint64(r.Completion.MaxTokens))
		}
		usage := bramatest.Usage(1000, completion)
		if calls != nil {
			if c := calls(k); len(c) > 0 {
				return bramatest.ToolCallsReply(usage, c...)
			}
		}
		return bramatest.TextReply("nothing to do", usage)
	})
	return w
}

// requireNeverNegative replays the journal's money events from the
// starting balance: no step leaves the balance below zero.
func requireNeverNegative(t *testing.T, starting money.Amount, events []state.Event) {
	t.Helper()
	balance := starting
	for _, e := range events {
		switch e.Type {
		case state.EventCostDebited:
			balance = balance.Sub(e.Amount)
		case state.EventRevenueCredited:
			balance = balance.Add(e.Amount)
		case state.EventEndowmentGranted:
			balance = balance.Sub(e.Amount)
		}
		require.GreaterOrEqual(t, balance.Sign(), 0, "event %d (%s) leaves the balance at %s", e.Seq, e.Type, balance)
	}
}

// TestRunNeverOverdraws: with 0.004 USD and completions of about 0.0027,
// run reserves each completion's worst case first: the first call's
// max_tokens is lowered from 4096 to what 0.004 pays for, the second
// (0.0014 left) is lowered again and still made, and then the being is
// exhausted with a balance that never went below zero.
func TestRunNeverOverdraws(t *testing.T) {
	t.Parallel()
	w := overdraftWorld(t, false, nil)
	r := w.start("run").wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)

	st := w.loadState()
	assert.Equal(t, state.StatusExhausted, st.Status)
	assert.GreaterOrEqual(t, st.Budget.Remaining.Sign(), 0, "remaining %s", st.Budget.Remaining)
	events := w.journal()
	requireNeverNegative(t, testkit.USD("0.004"), events)
	assert.Zero(t, testkit.CountWhere(events, func(e state.Event) bool {
		return e.Type == state.EventWarning && e.Message == "completion cost exceeded its reservation"
	}))
	calls := w.brama.Completions()
	require.Len(t, calls, 2, "a second, smaller call fits; a third does not")
	first, second := calls[0].Completion.MaxTokens, calls[1].Completion.MaxTokens
	assert.Less(t, first, 4096, "the first call is lowered to what 0.004 pays for")
	assert.Greater(t, first, 2600)
	assert.Less(t, second, 1400, "the second is lowered to what is left")
	assert.GreaterOrEqual(t, second, 256, "but not below SINGULARITY_MIN_COMPLETION_TOKENS")
	assert.Equal(t, 2, testkit.Count(events, state.EventCostDebited))
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestOnceNeverOverdraws: the same in once, where the rounds of one cycle
// run the balance down: the cycle ends budget_exhausted before a round it
// could not pay for.
func TestOnceNeverOverdraws(t *testing.T) {
	t.Parallel()
	w := overdraftWorld(t, false, func(n int) []chat.ToolCall {
		return []chat.ToolCall{bramatest.Call(fmt.Sprintf("c%d", n), "singularity_self_add_rule", `{"rule":"spend less"}`)}
	})
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"status": "budget_exhausted"`)
	st := w.loadState()
	assert.Equal(t, state.StatusExhausted, st.Status)
	events := w.journal()
	requireNeverNegative(t, testkit.USD("0.004"), events)
	assert.Len(t, w.brama.Completions(), 2)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestOverdraftOnlyPastMaxTokens: a gateway that ignores max_tokens bills
// more than the reservation: the cost is debited in full, the warning is
// journaled, and only then can remaining go below zero.
func TestOverdraftOnlyPastMaxTokens(t *testing.T) {
	t.Parallel()
	w := overdraftWorld(t, true, nil)
	w.env["BRAMA_MAX_TOKENS"] = "1024"
	w.env["SINGULARITY_STARTING_BALANCE_USD"] = "0.002"
	r := w.start("run").wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	st := w.loadState()
	assert.Equal(t, state.StatusExhausted, st.Status)
	assert.Negative(t, st.Budget.Remaining.Sign(), "2600 tokens billed against a reservation of 1024")
	events := w.journal()
	assert.Equal(t, 1, testkit.CountWhere(events, func(e state.Event) bool {
		return e.Type == state.EventWarning && e.Message == "completion cost exceeded its reservation"
	}))
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestRunPermanentBramaError: a permanent Brama error (HTTP 4xx, a
// contradictory completion) ends the root being and the run: exit 3,
// status failed, the documented sentence on stderr.
func TestRunPermanentBramaError(t *testing.T) {
	t.Parallel()
	stopWithCalls := bramatest.Completion(bramatest.ReplyMessage{
		Content:   bramatest.Text("x"),
		ToolCalls: []chat.ToolCall{bramatest.Call("c", "echo__echo", `{}`)},
	}, "stop", bramatest.Usage(1, 1))
	cases := []struct {
		name  string
		reply bramatest.Reply
		line  string
	}{
		{"http 400", bramatest.ErrorReply(http.StatusBadRequest, "model does not exist"), "singularity: brama: HTTP 400: model does not exist"},
		{"stop with calls", bramatest.JSONReply(stopWithCalls), "singularity: brama: stop finish reason with tool calls"},
		{"no choice", bramatest.RawReply(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`), "singularity: brama: response must contain exactly one choice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, `{}`)
			w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply { return tc.reply })
			r := w.start("run").wait(waitLimit)
			assert.Equal(t, 3, r.code, r.stderr)
			assert.Equal(t, tc.line, r.errorLine())
			st := w.loadState()
			assert.Equal(t, state.StatusFailed, st.Status)
			end := last(w.journal())
			assert.Equal(t, state.EventStopped, end.Type)
			assert.Equal(t, state.StatusFailed, end.Status)
			assert.Len(t, w.brama.Completions(), 1, "a permanent error is not retried")
		})
	}
}

// TestRunSecondSignalSkipsWaiting: Ctrl-C while a model call hangs waits
// the shutdown grace; a second Ctrl-C abandons the call at once (with a
// journaled warning) and still saves.
func TestRunSecondSignalSkipsWaiting(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.env["SINGULARITY_SHUTDOWN_GRACE_SECS"] = "120"
	arrived := make(chan struct{})
	var once sync.Once
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		once.Do(func() { close(arrived) })
		return bramatest.Reply{Stall: true}
	})
	p := w.start("run")
	select {
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the being never called Brama")
	}
	p.signal(os.Interrupt)
	p.stderr.waitFor(t, "signal received", waitLimit)
	p.signal(os.Interrupt)
	r := p.wait(30 * time.Second) // far below the 120 s grace
	require.Equal(t, 0, r.code, r.stderr)

	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	events := w.journal()
	assert.Equal(t, []string{"started", "cycle_started", "warning", "stopped"}, testkit.Types(events))
	assert.Equal(t, "abandoned model call in flight: shutdown without waiting", events[2].Message)
}

// TestRunTransientBramaError: a 503 is journaled as a warning and the
// being lives on. Retries are off, so the 503 reaches the cycle
// (TestRetriedWithinTheRound has them on).
func TestRunTransientBramaError(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.env["BRAMA_RETRIES"] = "0"
	w.brama.Enqueue(bramatest.ErrorReply(http.StatusServiceUnavailable, "overloaded"))
	w.brama.SetHandler(textReplies(100, 10))
	p := w.start("run")
	events := w.waitJournal(waitLimit, "a cycle after the warning", func(events []state.Event) bool {
		return testkit.Count(events, state.EventWarning) > 0 && testkit.Count(events, state.EventModelCompleted) >= 1
	})
	p.signal(os.Interrupt)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)

	assert.Equal(t, []string{"started", "cycle_started", "warning", "cycle_started"}, testkit.Types(events)[:4])
	assert.Equal(t, "brama: HTTP 503: overloaded", events[2].Message)
	assert.Equal(t, uint64(1), events[2].Cycle)
	assert.Equal(t, uint64(2), events[3].Cycle)
	assert.Equal(t, state.StatusStopped, w.loadState().Status)
}

// TestRunResumeContinues: once, then run --resume, continues the cycle
// counter and the same budget; the journal of both lives satisfies the
// ledger invariant.
func TestRunResumeContinues(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100)) // 0.00021 per completion
	require.Equal(t, 0, w.run("once").code)
	first := w.loadState()
	require.Equal(t, uint64(1), first.Cycle)
	assert.Equal(t, "9.99979", first.Budget.Remaining.String())

	r := w.run("run")
	assert.Equal(t, 4, r.code)
	assert.Equal(t, "singularity: state: state already exists at "+w.stateDir+"/state.json; use --resume or a new directory", r.errorLine())

	p := w.start("run", "--resume")
	w.waitJournal(waitLimit, "cycle 3", func(events []state.Event) bool {
		return testkit.Count(events, state.EventCycleStarted) >= 3
	})
	p.signal(os.Interrupt)
	r = p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)

	st := w.loadState()
	events := w.journal()
	var cycles []uint64
	for _, e := range events {
		if e.Type == state.EventCycleStarted {
			cycles = append(cycles, e.Cycle)
		}
	}
	for i, c := range cycles {
		assert.Equal(t, uint64(i+1), c, "cycle numbers continue across the resume")
	}
	assert.Equal(t, 2, testkit.Count(events, state.EventStarted))
	assert.Equal(t, uint64(len(cycles)), st.Cycle)
	assert.Equal(t, "10", st.Budget.Starting.String())
	debits := testkit.Count(events, state.EventCostDebited)
	// Every completion costs 0.00021; the budget is one budget.
	assert.Equal(t, st.Budget.Starting.String(), st.Budget.Remaining.Add(st.Budget.APISpent).String())
	assert.Equal(t, testkit.USD("0.00021").Mul(money.FromInt(int64(debits))).String(), st.Budget.APISpent.String(), "api_spent over both lives")
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Equal(t, first.StartedAt, st.StartedAt)
}

// TestBootRequiredSurfaceMissing: a required surface Las does not offer
// fails boot permanently (exit 3), and the refused boot writes nothing:
// a fresh being leaves no state directory, a resumed one its directory
// byte for byte as it was (docs/state.md#boot-gates).
func TestBootRequiredSurfaceMissing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{"surfaces":["echo","skarbiec"]}`)
	w.env["SINGULARITY_REQUIRED_SURFACES"] = "finance"
	r := w.run("once")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "singularity: mcp: required Las surface unavailable: finance", r.errorLine())
	assert.Empty(t, r.stdout)
	assert.Empty(t, w.brama.Requests(), "Brama is never called")
	assert.Empty(t, testkit.Snapshot(t, w.stateDir), "a refused fresh boot creates nothing")

	// The same refusal on resume leaves the existing state as it was.
	w.env["SINGULARITY_REQUIRED_SURFACES"] = ""
	w.brama.Enqueue(bramatest.TextReply("ok", bramatest.Usage(10, 1)))
	require.Equal(t, 0, w.run("once").code)
	before := testkit.Snapshot(t, w.stateDir)
	w.env["SINGULARITY_REQUIRED_SURFACES"] = "finance"
	r = w.run("once", "--resume")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, before, testkit.Snapshot(t, w.stateDir), "a refused resume appends nothing")
}

// dupLas is a minimal MCP server in POSIX sh (the example Las cannot be
// configured to offer a colliding name): it lists a tool named like a
// built-in.
const dupLas = `while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"dup","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"finance__quote","description":"q","inputSchema":{"type":"object"}},{"name":"singularity_memory_remember","description":"shadow","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
  esac
done
`

// TestBootDuplicateTool: a Las tool colliding with a built-in fails
// registration (exit 5).
func TestBootDuplicateTool(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	script := filepath.Join(w.dir, "dup.sh")
	require.NoError(t, os.WriteFile(script, []byte(dupLas), 0o600))
	w.env["LAS_COMMAND"] = "/bin/sh"
	w.env["LAS_MCP_ENTRYPOINT"] = script
	w.env["SINGULARITY_REQUIRED_SURFACES"] = "finance"
	r := w.run("once")
	assert.Equal(t, 5, r.code, r.stderr)
	assert.Equal(t, "singularity: tool: duplicate tool: singularity_memory_remember", r.errorLine())
	assert.Empty(t, w.brama.Requests())
	assert.Empty(t, testkit.Snapshot(t, w.stateDir), "a refused boot creates nothing")
}
