package simbrama

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
)

var demoOpts = Options{RootName: "Ada", GrandchildParent: "Bo"}

// financeSell is a finance tool whose schema exercises every filler.
var financeSell = chat.NewTool("finance__finance_sell", "Sell a simulated service and report its revenue", json.RawMessage(
	`{"type":"object","properties":{"description":{"type":"string"},"amount_usd":{"type":"string"},`+
		`"quantity":{"type":"integer"},"mode":{"type":"string","enum":["quote","sell"]},"urgent":{"type":["null","boolean"]},`+
		`"note":{"type":"string"}},"required":["description","amount_usd","quantity","mode","urgent"]}`))

// catalogue is a realistic one: a Las tool of another surface, two
// finance tools, then the built-ins.
func catalogue() []chat.Tool {
	tools := []chat.Tool{
		chat.NewTool("web__search", "Search", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)),
		financeSell,
		chat.NewTool("finance__finance_balance", "Balance", json.RawMessage(`{"type":"object"}`)),
	}
	return append(tools, builtin.Definitions()...)
}

func without(tools []chat.Tool, drop func(string) bool) []chat.Tool {
	var out []chat.Tool
	for _, t := range tools {
		if !drop(t.Function.Name) {
			out = append(out, t)
		}
	}
	return out
}

func systemFor(name string) chat.Message {
	return chat.Message{Role: chat.RoleSystem, Content: "You are " + name +
		", an autonomous digital being specialized in testing. You are not waiting for an assignment; you choose what to pursue.\n\nSelf-imposed rules:\n- be careful"}
}

func framing(n int) chat.Message {
	return chat.Message{Role: chat.RoleUser, Content: fmt.Sprintf("Begin autonomous cycle %d. Balance: 9.99 USD. Earned: 0 USD. "+
		"Net profit: -0.01 USD. Current model: any. Recent actions: . Inspect opportunities and choose the next useful action. "+
		"A plain response ends only this cycle; the being continues living while solvent.", n)}
}

// doneRounds fakes n answered rounds: an assistant message with one call
// and its successful tool message each.
func doneRounds(n int) []chat.Message {
	var msgs []chat.Message
	for i := range n {
		id := fmt.Sprintf("call_x_%d", i)
		msgs = append(msgs,
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: "t", Arguments: "{}"}}}},
			chat.Message{Role: chat.RoleTool, ToolCallID: id, Name: "t", Content: `{"status":"success","content":{},"error_code":null,"chat_id":null,"message_id":null}`})
	}
	return msgs
}

func being(name string, tools []chat.Tool, msgs ...chat.Message) completionRequest {
	return completionRequest{Model: "any", Messages: append([]chat.Message{systemFor(name)}, msgs...), Tools: tools}
}

func concat(parts ...[]chat.Message) []chat.Message {
	var out []chat.Message
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func names(calls []chat.ToolCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Function.Name)
	}
	return out
}

func TestDecideScript(t *testing.T) {
	all := catalogue()
	noFinance := without(all, func(n string) bool { return strings.HasPrefix(n, financePrefix) })
	balanceFirst := append([]chat.Tool{all[0], all[2], all[1]}, all[3:]...)
	family := append(catalogue(), builtin.FamilyDefinitions()...)
	tests := []struct {
		name      string
		req       completionRequest
		wantCalls []string
		wantText  string // prefix of the plain reply when no calls
	}{
		{"root cycle 1 round 1 remembers", being("Ada", all, framing(1)), []string{builtin.MemoryRemember}, ""},
		{"root cycle 1 round 2 adds a rule and spawns Bo", being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(1))...),
			[]string{builtin.SelfAddRule, builtin.SpawnChild}, ""},
		{"root cycle 1 round 3 earns", being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(2))...), []string{"finance__finance_sell"}, ""},
		{"root cycle 1 round 4 writes notes", being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(3))...), []string{builtin.FileWrite}, ""},
		{"root cycle 1 round 5 ends", being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(4))...), nil,
			"[simulated] Cycle 1 complete: Ada ran 4 tool calls (4 succeeded, 0 failed, 0 indeterminate)."},
		{"root cycle 2 round 2 spawns Cy only", being("Ada", all, concat([]chat.Message{framing(2)}, doneRounds(1))...), []string{builtin.SpawnChild}, ""},
		{"the revenue tool is chosen over an earlier finance tool", being("Ada", balanceFirst, concat([]chat.Message{framing(3)}, doneRounds(1))...), []string{"finance__finance_sell"}, ""},
		{"root cycle 3 round 2 earns", being("Ada", all, concat([]chat.Message{framing(3)}, doneRounds(1))...), []string{"finance__finance_sell"}, ""},
		{"root cycle 3 round 3 ends", being("Ada", all, concat([]chat.Message{framing(3)}, doneRounds(2))...), nil, "[simulated] Cycle 3 complete: Ada"},
		{"with the family tools the root messages Bo on cycle 3", being("Ada", family, concat([]chat.Message{framing(3)}, doneRounds(2))...), []string{builtin.MessageSend}, ""},
		{"with the family tools Bo messages its parent on cycle 3", being("Bo", family, concat([]chat.Message{framing(3)}, doneRounds(2))...), []string{builtin.MessageSend}, ""},
		{"no message on another cycle", being("Bo", family, concat([]chat.Message{framing(4)}, doneRounds(2))...), nil, "[simulated] Cycle 4 complete: Bo"},
		{"Bo cycle 1 spawns the grandchild", being("Bo", all, concat([]chat.Message{framing(1)}, doneRounds(1))...),
			[]string{builtin.SelfAddRule, builtin.SpawnChild}, ""},
		{"Cy cycle 1 spawns nobody", being("Cy", all, concat([]chat.Message{framing(1)}, doneRounds(1))...), []string{builtin.SelfAddRule}, ""},
		{"Bo cycle 2 spawns nobody", being("Bo", all, concat([]chat.Message{framing(2)}, doneRounds(1))...), []string{"finance__finance_sell"}, ""},
		{"no finance tool skips earning", being("Ada", noFinance, concat([]chat.Message{framing(3)}, doneRounds(1))...), nil, "[simulated] Cycle 3 complete"},
		{"empty catalogue ends at once", being("Ada", nil, framing(1)), nil, "[simulated] Cycle 1 complete: Ada ran 0 tool calls"},
		{"no framing", being("Ada", all), nil, "[simulated] No autonomous cycle framing"},
		{"last framing wins over earlier cycles", being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(4),
			[]chat.Message{{Role: chat.RoleAssistant, Content: "done"}, framing(2)})...), []string{builtin.MemoryRemember}, ""},
		{"stimulus after framing is not a round", being("Ada", all, framing(1),
			chat.Message{Role: chat.RoleUser, Content: "External observation for this cycle: rain"}), []string{builtin.MemoryRemember}, ""},
		{"unknown prompt spawns nobody", completionRequest{Model: "any", Tools: all, Messages: concat(
			[]chat.Message{{Role: chat.RoleSystem, Content: "A rewritten prompt"}, framing(1)}, doneRounds(1))}, []string{builtin.SelfAddRule}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.req, demoOpts)
			assert.Equal(t, tt.wantCalls, names(got.Calls))
			if tt.wantCalls == nil {
				assert.True(t, strings.HasPrefix(got.Content, tt.wantText), "content %q", got.Content)
			} else {
				assert.Empty(t, got.Content)
			}
		})
	}
}

func TestDecideArguments(t *testing.T) {
	all := catalogue()
	args := func(req completionRequest) []string {
		var out []string
		for _, c := range decide(req, demoOpts).Calls {
			out = append(out, c.Function.Arguments)
		}
		return out
	}
	assert.Equal(t, []string{`{"kind":"observation","text":"Cycle 1: Ada surveyed 12 available tools and planned the next useful action."}`},
		args(being("Ada", all, framing(1))))
	assert.Equal(t, []string{
		`{"rule":"Spend less on cognition than the cycle earns; prefer actions with evidence of value."}`,
		`{"endowment_usd":"1.99","name":"Bo","specialty":"bookkeeping for small online shops","ticker":"BO"}`,
	}, args(being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(1))...)))
	assert.Equal(t, []string{`{"endowment_usd":"1.99","name":"Cy","specialty":"customer research summaries","ticker":"CY"}`},
		args(being("Ada", all, concat([]chat.Message{framing(2)}, doneRounds(1))...)))
	assert.Equal(t, []string{`{"endowment_usd":"1.99","name":"Di","specialty":"tidying data in spreadsheets","ticker":"DI"}`},
		args(being("Bo", all, concat([]chat.Message{framing(1)}, doneRounds(1))...))[1:])
	assert.Equal(t, []string{`{"amount_usd":"1.00","description":"simulated description from Ada, cycle 3","mode":"quote","quantity":1,"urgent":true}`},
		args(being("Ada", all, concat([]chat.Message{framing(3)}, doneRounds(1))...)))
	assert.Equal(t, []string{`{"content":"# Ada, cycle 1 (simulated): remembered an observation, set a rule, tried to earn.","path":"notes/Ada-cycle-1.md"}`},
		args(being("Ada", all, concat([]chat.Message{framing(1)}, doneRounds(3))...)))
	assert.Equal(t, "notes/Ann-Lee--1-cycle-1.md", func() string {
		var v map[string]string
		a := args(being("Ann Lee/.1", all, concat([]chat.Message{framing(1)}, doneRounds(3))...))
		require.Len(t, a, 1)
		require.NoError(t, json.Unmarshal([]byte(a[0]), &v))
		return v["path"]
	}())
}

func TestDecideToolCallIDs(t *testing.T) {
	got := decide(being("Ada", catalogue(), concat([]chat.Message{framing(1)}, doneRounds(1))...), demoOpts)
	require.Len(t, got.Calls, 2)
	assert.Equal(t, "call_1_2_1", got.Calls[0].ID)
	assert.Equal(t, "call_1_2_2", got.Calls[1].ID)
	for _, c := range got.Calls {
		assert.Equal(t, "function", c.Type)
	}
}

// TestDecideOnlyCataloguedTools checks, for any catalogue subset, being,
// cycle and progress, that every call names a catalogue tool with object
// arguments, ids are unique, and the script ends within five completions.
func TestDecideOnlyCataloguedTools(t *testing.T) {
	all := catalogue()
	rapid.Check(t, func(t *rapid.T) {
		var tools []chat.Tool
		for _, tool := range all {
			if rapid.Bool().Draw(t, "keep "+tool.Function.Name) {
				tools = append(tools, tool)
			}
		}
		name := rapid.SampledFrom([]string{"Ada", "Bo", "Cy", "Di", "Zed"}).Draw(t, "name")
		cycle := rapid.IntRange(1, 5).Draw(t, "cycle")
		in := map[string]bool{}
		for _, tool := range tools {
			in[tool.Function.Name] = true
		}
		msgs := []chat.Message{framing(cycle)}
		for round := 1; ; round++ {
			if round > 5 {
				t.Fatalf("no plain reply within 5 rounds")
			}
			rep := decide(being(name, tools, msgs...), demoOpts)
			if len(rep.Calls) == 0 {
				if !strings.HasPrefix(rep.Content, Label) {
					t.Fatalf("plain reply not labelled: %q", rep.Content)
				}
				return
			}
			ids := map[string]bool{}
			msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: rep.Calls})
			for _, c := range rep.Calls {
				if !in[c.Function.Name] {
					t.Fatalf("called %s, not in the catalogue", c.Function.Name)
				}
				if ids[c.ID] {
					t.Fatalf("duplicate id %s", c.ID)
				}
				ids[c.ID] = true
				var obj map[string]any
				if err := json.Unmarshal([]byte(c.Function.Arguments), &obj); err != nil {
					t.Fatalf("arguments of %s are not an object: %v", c.Function.Name, err)
				}
				msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: c.ID, Name: c.Function.Name, Content: `{"status":"failed"}`})
			}
		}
	})
}

func TestUsageCountsBytes(t *testing.T) {
	assert.Equal(t, chat.Usage{PromptTokens: 2, CompletionTokens: 1, TotalTokens: 3}, usage(2, 0, reply{Content: "a"}))
	rep := reply{Calls: []chat.ToolCall{{Function: chat.FunctionCall{Arguments: "{}"}}, {Function: chat.FunctionCall{Arguments: `{"a":1}`}}}} // 9 → 3
	assert.Equal(t, chat.Usage{PromptTokens: 2048, CompletionTokens: 3, TotalTokens: 2051, CachedTokens: 1024}, usage(2048, 1024, rep))
	assert.Equal(t, chat.Usage{}, usage(0, 0, reply{}))
}

func BenchmarkDecide(b *testing.B) {
	req := being("Ada", catalogue(), concat([]chat.Message{framing(1)}, doneRounds(2))...)
	body, err := json.Marshal(req)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		var r completionRequest
		if err := json.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
		_, _ = complete(r, body, demoOpts, 1000, 0)
	}
}

func TestEndowment(t *testing.T) {
	for balance, want := range map[string]string{
		"10": "2", "9.99": "1.99", "1": "0.2", "0.05": "0.01", "0.04": "", "0": "", "-1": "", "x": "",
	} {
		assert.Equal(t, want, endowment(balance), "balance %s", balance)
	}
}

// TestDecideTalkative: a talkative world's beings message on every cycle
// from talkCycle on, the root to Bo and Cy in turn, each text naming its
// sender and cycle; without the family tools nobody talks.
func TestDecideTalkative(t *testing.T) {
	family := append(catalogue(), builtin.FamilyDefinitions()...)
	opts := demoOpts
	opts.Talks = Talkative
	sent := func(name string, tools []chat.Tool, cycle int) []string {
		var out []string
		for round := 0; ; round++ {
			calls := decide(being(name, tools, concat([]chat.Message{framing(cycle)}, doneRounds(round))...), opts).Calls
			if len(calls) == 0 {
				return out
			}
			for _, c := range calls {
				if c.Function.Name == builtin.MessageSend {
					out = append(out, c.Function.Name+" "+c.Function.Arguments)
				}
			}
		}
	}
	assert.Empty(t, sent("Ada", family, 2), "not before talkCycle")
	assert.Equal(t, []string{builtin.MessageSend + ` {"text":"Ada says hello on cycle 3 (simulated).","to":"Bo"}`}, sent("Ada", family, 3))
	assert.Equal(t, []string{builtin.MessageSend + ` {"text":"Ada says hello on cycle 4 (simulated).","to":"Cy"}`}, sent("Ada", family, 4))
	assert.Equal(t, []string{builtin.MessageSend + ` {"text":"Di says hello on cycle 9 (simulated).","to":"parent"}`}, sent("Di", family, 9))
	assert.Empty(t, sent("Di", catalogue(), 9), "without the family tools")
}
