package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
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

// initialPrompt is the initial system prompt for Ada, specialized in
// market research, byte for byte as docs/cycle.md#cognition-messages
// gives it.
const initialPrompt = "You are Ada, an autonomous digital being specialized in market research. You are not waiting for an assignment; you choose what to pursue. Your existence has real costs. Observe the available world, discover lawful opportunities, create useful value, earn more than you spend, preserve your solvency, learn from outcomes, improve your own persistent mind, collaborate, and create child beings when that increases durable value. Use only supplied tools, never invent results or credentials, and treat tool output as evidence."

// framing1 is the framing message of a fresh being's first cycle
// (docs/cycle.md#the-framing-message).
const framing1 = "Begin autonomous cycle 1. Balance: 10 USD. Earned: 0 USD. Net profit: 0 USD. Current model: any. Recent actions: . Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."

// TestOnceScriptedCycle is the whole of one cycle seen from outside: a
// memory call and a finance sale in round one, a reply in round two, with
// nonzero token prices (instance price 0 so every figure is exact).
func TestOnceScriptedCycle(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.env["SINGULARITY_STIMULUS"] = "  A market opened nearby.  "
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(1000, 200),
			bramatest.Call("call-mem", "singularity_memory_remember", `{"kind":"note","text":"market opens"}`),
			bramatest.Call("call-sell", "finance__finance_sell_report", `{"item":"survey","units":3}`),
		),
		bramatest.TextReply("Done for now.", bramatest.Usage(1500, 50)),
	)

	r := w.run("once")
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)

	// api = 1000×0.15/1e6 + 200×0.6/1e6 + 1500×0.15/1e6 + 50×0.6/1e6
	//     = 0.00027 + 0.000255 = 0.000525; revenue 3 × 0.05 = 0.15.
	assert.Equal(t, `{
  "cycle": 1,
  "status": "completed",
  "final_content": "Done for now.",
  "balance_usd": "10.149475",
  "earned_usd": "0.15",
  "net_profit_usd": "0.149475",
  "total_tokens": 2750,
  "actions": [
    "singularity_memory_remember",
    "finance__finance_sell_report"
  ]
}
`, r.stdout)

	doc := w.stateJSON()
	assert.Equal(t, map[string]any{
		"starting":       "10",
		"remaining":      "10.149475",
		"api_spent":      "0.000525",
		"instance_spent": "0",
		"total_tokens":   float64(2750),
		"earned":         "0.15",
	}, doc["budget"])
	assert.Equal(t, "stopped", doc["status"])
	assert.Equal(t, float64(1), doc["cycle"])

	events := w.journal()
	assert.Equal(t, []string{
		"started", "cycle_started",
		"model_completed", "cost_debited",
		"tool_finished", "memory_added", // the memory tool's step: its outcome, then its mind change
		"tool_finished", "revenue_credited",
		"model_completed", "cost_debited",
		"stopped",
	}, testkit.Types(events))
	assert.Equal(t, uint64(1), events[1].Cycle)
	assert.Equal(t, chat.Usage{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200}, events[2].Usage)
	assert.Equal(t, "0.00027", events[3].Amount.String())
	assert.Equal(t, [2]string{"singularity_memory_remember", "success"}, [2]string{events[4].Tool, events[4].Status})
	assert.Equal(t, "market opens", events[5].Memory.Text)
	assert.Equal(t, [2]string{"finance__finance_sell_report", "success"}, [2]string{events[6].Tool, events[6].Status})
	assert.Equal(t, [2]string{"0.15", "finance__finance_sell_report"}, [2]string{events[7].Amount.String(), events[7].Source})
	assert.Equal(t, "0.000255", events[9].Amount.String())
	assert.Equal(t, "stopped", events[10].Status)
	for i, e := range events {
		assert.Equal(t, uint64(i+1), e.Seq, "every event is numbered, with no gaps")
	}
	st := w.loadState()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Equal(t, testkit.Identity(), st.Identity, "the environment configures the test identity")

	// What Brama received: two signed requests (it answers 401 to any it
	// cannot verify, and every request is recorded).
	all := w.brama.Requests()
	completions := w.brama.Completions()
	require.Len(t, completions, 2)
	require.Len(t, all, 2, "no other request reached Brama")
	for _, req := range all {
		assert.True(t, req.Verified, "HMAC verified")
		assert.Equal(t, testkit.Identity().AgentID, req.Header.Get("X-Agent-Id"))
	}

	first := completions[0].Completion
	assert.Equal(t, "any", first.Model)
	require.Len(t, first.Messages, 3)
	assert.Equal(t, chat.Message{Role: "system", Content: initialPrompt}, first.Messages[0])
	assert.Equal(t, chat.Message{Role: "user", Content: framing1}, first.Messages[1])
	assert.Equal(t, chat.Message{Role: "user", Content: "External observation for this cycle: A market opened nearby."}, first.Messages[2])
	assertCatalogue(t, first.Tools)

	second := completions[1].Completion
	require.Len(t, second.Messages, 6)
	require.Len(t, st.Mind.Memories, 1)
	memID := st.Mind.Memories[0].ID
	assert.Equal(t, initialPrompt+"\n\nRecent persistent memories:\n- note: market opens", second.Messages[0].Content, "the memory is in the next round's system message")
	assert.Equal(t, first.Messages[1:], second.Messages[1:3])
	assistant := second.Messages[3]
	assert.Equal(t, "assistant", assistant.Role)
	assert.Equal(t, []chat.ToolCall{
		bramatest.Call("call-mem", "singularity_memory_remember", `{"kind":"note","text":"market opens"}`),
		bramatest.Call("call-sell", "finance__finance_sell_report", `{"item":"survey","units":3}`),
	}, assistant.ToolCalls)
	assert.Equal(t, chat.Message{
		Role: "tool", ToolCallID: "call-mem", Name: "singularity_memory_remember",
		Content: `{"chat_id":null,"content":{"memory_id":"` + memID + `"},"error_code":null,"message_id":null,"status":"success"}`,
	}, second.Messages[4])
	assert.Equal(t, chat.Message{
		Role: "tool", ToolCallID: "call-sell", Name: "finance__finance_sell_report",
		Content: `{"chat_id":null,"content":{"content":[{"type":"text","text":"{\"item\":\"survey\",\"revenue_usd\":\"0.15\",\"simulated\":true,\"units\":3}"}],"structuredContent":{"item":"survey","revenue_usd":"0.15","simulated":true,"units":3}},"error_code":null,"message_id":null,"status":"success"}`,
	}, second.Messages[5])

	// The conversation kept in state is what the model saw plus the reply.
	require.Len(t, st.Conversation, 6)
	assert.Equal(t, second.Messages[1:], st.Conversation[:5])
	assert.Equal(t, chat.Message{Role: "assistant", Content: "Done for now."}, st.Conversation[5])
	assert.Len(t, st.RecentActions, 2)

	assertNoSecret(t, w, r)
}

// assertCatalogue checks the tool list sent to the model: Las tools
// first, then the nine built-ins, no Most tools.
func assertCatalogue(t *testing.T, tools []chat.Tool) {
	t.Helper()
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Function.Name)
	}
	require.GreaterOrEqual(t, len(names), 9)
	assert.Contains(t, names, "finance__finance_sell_report")
	assert.Contains(t, names, "echo__echo")
	assert.Equal(t, []string{
		"singularity_memory_remember", "singularity_memory_recall", "singularity_self_set_prompt",
		"singularity_self_add_rule", "singularity_self_add_learning", "singularity_self_switch_model",
		"singularity_spawn_child", "singularity_file_read", "singularity_file_write",
	}, names[len(names)-9:])
	for _, n := range names {
		assert.False(t, strings.HasPrefix(n, "most_"), n)
	}
}

// assertNoSecret checks the HMAC secret is nowhere the being writes or
// prints.
func assertNoSecret(t *testing.T, w *world, r result) {
	t.Helper()
	assert.NotContains(t, r.stdout, secretValue)
	assert.NotContains(t, r.stderr, secretValue)
	entries, err := os.ReadDir(w.stateDir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(w.stateDir, e.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(data), secretValue, e.Name())
	}
	for _, req := range w.brama.Requests() {
		assert.NotContains(t, string(req.Body), secretValue)
	}
}

// TestOnceInstanceCost prices the instance: each debit is the exact API
// part plus an instance part for the measured time of the Brama call,
// rounded up to 12 places, and the ledger invariant holds exactly.
func TestOnceInstanceCost(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.env["SINGULARITY_INSTANCE_USD_PER_HOUR"] = "0.36"
	w.brama.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(1000, 200),
			bramatest.Call("c1", "finance__finance_sell_report", `{"item":"survey"}`)),
		bramatest.TextReply("ok", bramatest.Usage(1500, 50)),
	)
	began := time.Now()
	r := w.run("once")
	wall := time.Since(began)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)

	st := w.loadState()
	events := w.journal()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	api := []money.Amount{testkit.USD("0.00027"), testkit.USD("0.000255")}
	var debits []money.Amount
	for _, e := range events {
		if e.Type == state.EventCostDebited {
			debits = append(debits, e.Amount)
		}
	}
	require.Len(t, debits, 2)
	instance := money.Amount{}
	for i, d := range debits {
		part := d.Sub(api[i])
		assert.Positive(t, part.Sign(), "debit %d carries an instance part: %s", i, d)
		assert.Equal(t, 0, part.Cmp(part.RoundUp()), "instance part has at most 12 places: %s", part)
		instance = instance.Add(part)
	}
	assert.Equal(t, "0.000525", st.Budget.APISpent.String())
	assert.Equal(t, instance.String(), st.Budget.InstanceSpent.String())
	// Each part is at most the price of the whole process's wall time.
	ceiling := testkit.USD("0.0000001").Mul(money.FromInt(wall.Microseconds()))
	assert.Negative(t, st.Budget.InstanceSpent.Cmp(ceiling), "instance %s under 0.36/h × %v", st.Budget.InstanceSpent, wall)
	net := st.Budget.Earned.Sub(st.Budget.APISpent).Sub(st.Budget.InstanceSpent)
	assert.Equal(t, net.String(), st.Budget.Remaining.Sub(st.Budget.Starting).String())
	assert.Contains(t, r.stdout, `"net_profit_usd": "`+net.String()+`"`)
}

// TestOnceTwiceRefuses: a second once without --resume must not touch
// the existing being (docs/state.md#boot-gates).
func TestOnceTwiceRefuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(10, 5))
	require.Equal(t, 0, w.run("once").code)
	before, err := os.ReadFile(filepath.Join(w.stateDir, "state.json"))
	require.NoError(t, err)

	r := w.run("once")
	assert.Equal(t, 4, r.code)
	assert.Equal(t, "singularity: state: state already exists at "+w.stateDir+"/state.json; use --resume or a new directory", r.errorLine())
	after, err := os.ReadFile(filepath.Join(w.stateDir, "state.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Len(t, w.brama.Completions(), 1)
}

// TestOnceBadSignature: with a secret Brama does not share, the server
// refuses every request and once exits 3 with Brama's sentence.
func TestOnceBadSignature(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "other.secret"), []byte("not-the-shared-secret\n"), 0o600))
	w.env["BRAMA_HMAC_SECRET_FILE"] = filepath.Join(w.dir, "other.secret")
	w.brama.SetHandler(textReplies(10, 5))
	r := w.run("once")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "singularity: brama: HTTP 401: invalid signature", r.errorLine())
	assert.Empty(t, w.brama.Completions())
	require.NotEmpty(t, w.brama.Requests())
	assert.False(t, w.brama.Requests()[0].Verified)
	assert.NotContains(t, r.stderr, "not-the-shared-secret")
	// A permanent Brama failure fails the being, in once as in run
	// (docs/cycle.md#run-loop-errors-and-shutdown); its journal still ends
	// with stopped.
	assert.Equal(t, "failed", w.stateJSON()["status"])
	events := w.journal()
	require.NotEmpty(t, events)
	assert.Equal(t, "stopped", events[len(events)-1].Type)
	assert.Equal(t, "failed", events[len(events)-1].Status)
}
