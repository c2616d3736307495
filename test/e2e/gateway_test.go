package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// apiKeyValue is the bearer key of the other-gateway worlds; it must
// appear nowhere but in the Authorization header.
const apiKeyValue = "sk-e2e-provider-key-5d1c9"

// newGatewayWorld is a world whose model gateway is not Brama but another
// OpenAI-compatible server (docs/brama.md#other-openai-compatible-gateways):
// auth is "bearer" (the key in BRAMA_API_KEY_FILE) or "none"; the base URL
// ends in /v1 and the server has no /health. No HMAC secret is configured.
func newGatewayWorld(t *testing.T, auth string, models ...string) *world {
	t.Helper()
	w := newWorld(t, `{}`)
	cfg := bramatest.Config{Auth: auth, Models: models}
	if auth == "bearer" {
		cfg.APIKey = []byte(apiKeyValue)
	}
	w.brama = bramatest.Start(t, cfg)
	delete(w.env, "BRAMA_HMAC_SECRET_FILE")
	w.env["BRAMA_AUTH"] = auth
	w.env["BRAMA_BASE_URL"] = w.brama.URL
	w.env["BRAMA_MODEL"] = models[0]
	w.env["SINGULARITY_LOG_LEVEL"] = "debug"
	if auth == "bearer" {
		key := filepath.Join(w.dir, "provider.key")
		require.NoError(t, os.WriteFile(key, []byte(apiKeyValue+"\n"), 0o600))
		w.env["BRAMA_API_KEY_FILE"] = key
	}
	return w
}

// warnings lists the journal's warning messages in order.
func warnings(events []state.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == state.EventWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

// debits lists the journal's cost_debited amounts in order.
func debits(events []state.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == state.EventCostDebited {
			out = append(out, e.Amount.String())
		}
	}
	return out
}

// TestOtherGateways lives a being against a bearer-key provider and a
// keyless local server: doctor is ok, once and run work, each of the four
// quirks of docs/brama.md#lenient-validation is journaled as its warning
// while the being lives on, and the key is nowhere but in the
// Authorization header (none: no Authorization header at all).
func TestOtherGateways(t *testing.T) {
	t.Parallel()
	for _, auth := range []string{"bearer", "none"} {
		t.Run(auth, func(t *testing.T) {
			t.Parallel()
			testOtherGateway(t, auth)
		})
	}
}

func testOtherGateway(t *testing.T, auth string) {
	w := newGatewayWorld(t, auth, "gpt-small", "gpt-large")
	var outputs []string
	record := func(r result) result {
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}

	r := record(w.run("doctor"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"ok":true`)
	assert.Contains(t, r.stdout, `"brama_model":"gpt-small"`)

	// Cycle 1: tools asked for under finish reason stop, then a usage total
	// larger than prompt plus completion.
	w.brama.Enqueue(
		bramatest.StopWithToolsReply(bramatest.Usage(1000, 200),
			bramatest.Call("call-mem", "singularity_memory_remember", `{"kind":"note","text":"provider quirks"}`)),
		bramatest.UsageMismatchReply("Noted.", 1500, 50, 1600),
	)
	r = record(w.run("once"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"final_content": "Noted."`)
	assert.Contains(t, r.stdout, `"singularity_memory_remember"`)
	events := w.journal()
	assert.Equal(t, []string{
		"completion finished with stop but asked for tools",
		"usage total does not match prompt plus completion",
	}, warnings(events))
	// 1000×0.15/1e6 + 200×0.6/1e6; then 1500×0.15/1e6 + (50+50)×0.6/1e6.
	assert.Equal(t, []string{"0.00027", "0.000285"}, debits(events))

	// Cycle 2: the content filter; cycle 3: no usage block.
	w.brama.Enqueue(bramatest.ContentFilterReply("I was about to", bramatest.Usage(900, 10)))
	r = record(w.run("once", "--resume"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"status": "completed"`)
	assert.Contains(t, r.stdout, `"final_content": ""`)
	w.brama.Enqueue(bramatest.NoUsageReply("Quiet cycle."))
	r = record(w.run("once", "--resume"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"final_content": "Quiet cycle."`)
	events = w.journal()
	assert.Equal(t, []string{
		"completion finished with stop but asked for tools",
		"usage total does not match prompt plus completion",
		"completion stopped by the provider's content filter",
		"completion reported no usage; charged its reservation",
	}, warnings(events))
	// The reservation: every request byte at the input price, max tokens
	// at the output price.
	reqs := w.brama.Completions()
	bytes := uint64(len(reqs[len(reqs)-1].Body))
	want := money.FromUint(bytes).Mul(testkit.USD("0.15")).Add(money.FromInt(2048).Mul(testkit.USD("0.6"))).QuoUp(money.FromInt(1_000_000))
	got := debits(events)
	assert.Equal(t, want.String(), got[len(got)-1])

	// run: every answer is a quirk, in turn, and the being lives on
	// until SIGTERM.
	var mu sync.Mutex
	turn := 0
	quirks := []func() bramatest.Reply{
		func() bramatest.Reply { return bramatest.NoUsageReply("quiet") },
		func() bramatest.Reply { return bramatest.ContentFilterReply("hm", bramatest.Usage(100, 10)) },
		func() bramatest.Reply { return bramatest.UsageMismatchReply("odd", 100, 10, 90) },
	}
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		turn++
		return quirks[turn%len(quirks)]()
	})
	p := w.start("run", "--resume")
	w.waitJournal(waitLimit, "four more cycles", cyclesStarted(7))
	p.signal(syscall.SIGTERM)
	r = record(p.wait(waitLimit))
	require.Equal(t, 0, r.code, r.stderr)
	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status, "the quirks never failed the being")
	events = w.journal()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.GreaterOrEqual(t, len(warnings(events)), 4+3)
	for _, msg := range warnings(events)[4:] {
		assert.Contains(t, []string{
			"completion stopped by the provider's content filter",
			"usage total does not match prompt plus completion",
			"completion reported no usage; charged its reservation",
		}, msg)
	}

	// Every request was authorized as the mode says, and only under /v1.
	for _, req := range w.brama.Requests() {
		assert.True(t, req.Verified, "%s %s", req.Method, req.Path)
		assert.Contains(t, []string{"/v1/models", "/v1/chat/completions"}, req.Path)
		auth, present := req.Header["Authorization"]
		if w.env["BRAMA_AUTH"] == "none" {
			assert.False(t, present, "no Authorization header is sent")
		} else {
			assert.Equal(t, []string{"Bearer " + apiKeyValue}, auth)
		}
		assert.Empty(t, req.Header.Get("X-Agent-Signature"))
		assert.NotContains(t, string(req.Body), apiKeyValue, "request body")
	}
	for _, req := range w.brama.Completions() {
		assert.Equal(t, 2048, req.Completion.MaxTokens)
	}
	assertNowhere(t, w, apiKeyValue, outputs)
}

// assertNowhere checks that text is in no output, log line, state file or
// journal of w.
func assertNowhere(t *testing.T, w *world, text string, outputs []string) {
	t.Helper()
	for _, out := range outputs {
		assert.NotContains(t, out, text, "output or log")
	}
	require.NoError(t, filepath.Walk(w.stateDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), text, path)
		return nil
	}))
}

// TestPerModelPrices: with BRAMA_PRICES_FILE listing two models, a being
// that switches between them pays each completion at its model's prices
// exactly: the response's model when listed, else the requested one, else
// the two price variables (docs/brama.md#per-model-prices).
func TestPerModelPrices(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-small", "gpt-large", "gpt-other")
	prices := filepath.Join(w.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{
  "gpt-small": {"input_usd_per_million": "0.1", "output_usd_per_million": "0.4"},
  "gpt-large": {"input_usd_per_million": "2.5", "output_usd_per_million": "10"}
}`), 0o600))
	w.env["BRAMA_PRICES_FILE"] = prices
	w.env["BRAMA_MAX_TOKENS_FIELD"] = "max_completion_tokens"

	w.brama.Enqueue(
		// gpt-small answers and asks to switch to gpt-large.
		bramatest.ModelReply("gpt-small", bramatest.ToolCallsReply(bramatest.Usage(1000, 100),
			bramatest.Call("c1", "singularity_self_switch_model", `{"model":"gpt-large"}`))),
		// gpt-large answers under a dated name the file does not list:
		// priced as the requested model.
		bramatest.ModelReply("gpt-large-2026-01-01", bramatest.ToolCallsReply(bramatest.Usage(2000, 300),
			bramatest.Call("c2", "singularity_self_switch_model", `{"model":"any"}`),
			bramatest.Call("c3", "singularity_self_switch_model", `{"model":"gpt-other"}`))),
		// gpt-other is in neither list nor file: the two variables
		// (0.15 and 0.6); its answer names gpt-small, which the file
		// lists, so gpt-small's prices apply.
		bramatest.ModelReply("gpt-small", bramatest.TextReply("Switched around.", bramatest.Usage(4000, 50))),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	reqs := w.brama.Completions()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"gpt-small", "gpt-large", "gpt-other"}, []string{reqs[0].Completion.Model, reqs[1].Completion.Model, reqs[2].Completion.Model})
	for _, req := range reqs {
		assert.Equal(t, 2048, req.Completion.MaxCompletionTokens)
		assert.Zero(t, req.Completion.MaxTokens)
	}
	events := w.journal()
	assert.Equal(t, []string{
		"0.00014", // 1000×0.1 + 100×0.4, per million
		"0.008",   // 2000×2.5 + 300×10
		"0.00042", // 4000×0.1 + 50×0.4
	}, debits(events))
	// The selector was refused (another gateway knows only listed ids).
	var outcomes []string
	for _, e := range events {
		if e.Type == state.EventToolFinished && e.Chat != nil {
			outcomes = append(outcomes, e.Chat.Content)
		}
	}
	require.Len(t, outcomes, 3)
	assert.Contains(t, outcomes[1], "model_unavailable")
	assert.Contains(t, outcomes[2], `"gpt-other"`)
	st := w.loadState()
	assert.Equal(t, "gpt-other", st.Mind.CurrentModel)
	assert.Equal(t, "0.00856", st.Budget.APISpent.String())
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))

	// Without a listed response model, the requested unlisted model pays
	// the two variables.
	w.brama.Enqueue(bramatest.ModelReply("", bramatest.TextReply("ok", bramatest.Usage(1000, 100))))
	r = w.run("once", "--resume")
	require.Equal(t, 0, r.code, r.stderr)
	got := debits(w.journal())
	assert.Equal(t, "0.00021", got[len(got)-1]) // 1000×0.15 + 100×0.6
}

// TestBilledRejection: Brama's strict validation refuses a completion that
// stops with tool calls, but its usage block is well formed, so the cost is
// debited (model_completed and cost_debited) before once fails with the
// error (docs/brama.md#billed-rejections).
func TestBilledRejection(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.Enqueue(bramatest.StopWithToolsReply(bramatest.Usage(1000, 200),
		bramatest.Call("c1", "singularity_memory_remember", `{"kind":"note","text":"x"}`)))
	r := w.run("once")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "singularity: brama: stop finish reason with tool calls", r.errorLine())
	events := w.journal()
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	assert.Equal(t, "started,cycle_started,model_completed,cost_debited", strings.Join(types[:4], ","))
	completed := events[2]
	assert.Nil(t, completed.Chat, "the refused message joins no conversation")
	assert.Equal(t, chat.Usage{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200}, completed.Usage)
	assert.Equal(t, []string{"0.00027"}, debits(events))
	assert.Zero(t, testkit.Count(events, state.EventToolFinished), "no tool of a refused completion runs")
	st := w.loadState()
	assert.Equal(t, "0.00027", st.Budget.APISpent.String())
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}

// TestRetriedWithinTheRound: with the default BRAMA_RETRIES a 429 with
// Retry-After: 1 is sent again after that second and the cycle never sees
// it; a dropped response is not sent again: once ends with its error
// (docs/brama.md#retries).
func TestRetriedWithinTheRound(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "none", "llama-3")
	w.brama.Enqueue(bramatest.RetryAfterReply(429, "1"), bramatest.TextReply("after a second", bramatest.Usage(10, 5)))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"final_content": "after a second"`)
	reqs := w.brama.Completions()
	require.Len(t, reqs, 2)
	assert.Equal(t, string(reqs[0].Body), string(reqs[1].Body))
	assert.Empty(t, warnings(w.journal()))

	dropped := bramatest.TextReply("cut", bramatest.Usage(10, 5))
	dropped.DropMidResponse = true
	w.brama.Enqueue(dropped)
	w.brama.SetHandler(textReplies(10, 5))
	r = w.run("once", "--resume")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "singularity: brama: no complete response: unexpected EOF", r.errorLine())
	assert.Len(t, w.brama.Completions(), 3, "the dropped response was not sent again")
}

// TestPricierResponseModelRaisesTheReservation: a response that names a
// model the prices file prices above the one reserved is debited at its
// prices, journals a warning, and every later reservation holds the
// higher prices (docs/money.md#no-overdraft): here the next request's
// max_tokens is lowered to what the balance pays for at them, where the
// configured model's prices would have left it whole.
func TestPricierResponseModelRaisesTheReservation(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "cheap", "pricey")
	prices := filepath.Join(w.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{
  "cheap":  {"input_usd_per_million": "0.1", "output_usd_per_million": "0.4"},
  "pricey": {"input_usd_per_million": "10",  "output_usd_per_million": "40"}
}`), 0o600))
	w.env["BRAMA_PRICES_FILE"] = prices
	w.env["SINGULARITY_STARTING_BALANCE_USD"] = "0.15"
	w.env["SINGULARITY_INSTANCE_USD_PER_HOUR"] = "0"
	w.env["BRAMA_MAX_TOKENS"] = "2048"

	w.brama.Enqueue(
		bramatest.ModelReply("pricey", bramatest.ToolCallsReply(bramatest.Usage(1000, 100),
			bramatest.Call("c1", "singularity_memory_recall", `{"query":"x"}`))),
		bramatest.ModelReply("cheap", bramatest.TextReply("done", bramatest.Usage(10, 5))),
	)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	reqs := w.brama.Completions()
	require.Equal(t, 2, len(reqs), "the second round is asked")
	assert.Equal(t, 2048, reqs[0].Completion.MaxTokens, "reserved at cheap's prices, the balance pays for all of it")
	assert.Less(t, reqs[1].Completion.MaxTokens, 2048, "reserved at pricey's prices from now on")
	assert.Greater(t, reqs[1].Completion.MaxTokens, 256)
	events := w.journal()
	got := debits(events)
	require.Len(t, got, 2)
	assert.Equal(t, "0.014", got[0]) // 1000×10 + 100×40, per million
	assert.Contains(t, warnings(events), "completion billed at a pricier model than reserved; reserving at its prices from now on")
	st := w.loadState()
	assert.Positive(t, st.Budget.Remaining.Sign())
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}
