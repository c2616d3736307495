package prompt

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

const fixturePath = "/work/shared/fixtures/reference-state-being-v1.json"

func actions(pairs ...string) []state.Action {
	var out []state.Action
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, state.Action{Tool: pairs[i], Status: pairs[i+1]})
	}
	return out
}

func TestFraming(t *testing.T) {
	const tail = ". Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."
	many := make([]state.Action, 0, 12)
	for i := range 12 {
		many = append(many, state.Action{Tool: fmt.Sprintf("t%d", i), Status: "success"})
	}
	tests := []struct {
		name                   string
		cycle                  uint64
		remaining, earned, net string
		model                  string
		recent                 []state.Action
		want                   string
	}{
		{"first cycle", 1, "10", "0", "0", "any", nil,
			"Begin autonomous cycle 1. Balance: 10 USD. Earned: 0 USD. Net profit: 0 USD. Current model: any. Recent actions: " + tail},
		{"newest first", 7, "9.98", "1.5", "-0.02", "gpt-x", actions("a", "success", "b", "failed", "c", "indeterminate"),
			"Begin autonomous cycle 7. Balance: 9.98 USD. Earned: 1.5 USD. Net profit: -0.02 USD. Current model: gpt-x. Recent actions: c:indeterminate, b:failed, a:success" + tail},
		{"ten at most", 3, "0.000034277778", "0", "-1", "task:code", many,
			"Begin autonomous cycle 3. Balance: 0.000034277778 USD. Earned: 0 USD. Net profit: -1 USD. Current model: task:code. Recent actions: t11:success, t10:success, t9:success, t8:success, t7:success, t6:success, t5:success, t4:success, t3:success, t2:success" + tail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Framing(tc.cycle, testkit.USD(tc.remaining), testkit.USD(tc.earned), testkit.USD(tc.net), tc.model, tc.recent)
			require.Equal(t, tc.want, got)
			require.True(t, state.IsFraming(chat.Message{Role: chat.RoleUser, Content: got}))
		})
	}
}

func loadFixture(t *testing.T) state.Being {
	t.Helper()
	data, err := os.ReadFile(fixturePath)
	require.NoError(t, err)
	var b state.Being
	require.NoError(t, json.Unmarshal(data, &b))
	return b
}

// The fixture's second framing message was written by the reference after
// cycle 1 with balance 9.9973 and one action; Framing must produce it byte
// for byte from the same figures.
func TestFramingMatchesReferenceFixture(t *testing.T) {
	b := loadFixture(t)
	var framings []string
	for _, m := range b.Conversation {
		if state.IsFraming(m) {
			framings = append(framings, m.Content)
		}
	}
	require.Len(t, framings, 2)
	require.Equal(t, framings[0], Framing(1, testkit.USD("10"), testkit.USD("0"), testkit.USD("0"), "any", nil))
	require.Equal(t, framings[1], Framing(2, testkit.USD("9.9973"), b.Budget.Earned,
		b.Budget.Earned.Sub(testkit.USD("0.0027")), b.Mind.CurrentModel, b.RecentActions))
	require.Equal(t, InitialSystemPrompt(b.Identity.Name, b.Identity.Specialty), b.Mind.SystemPrompt)
}

func TestStimulus(t *testing.T) {
	require.Equal(t, "External observation for this cycle: a bakery opened", Stimulus("a bakery opened"))
	require.False(t, state.IsFraming(chat.Message{Role: "user", Content: Stimulus("x")}))
}

func TestInitialSystemPrompt(t *testing.T) {
	require.Equal(t, "You are Bo, an autonomous digital being specialized in logistics. You are not waiting for an assignment; you choose what to pursue. Your existence has real costs. Observe the available world, discover lawful opportunities, create useful value, earn more than you spend, preserve your solvency, learn from outcomes, improve your own persistent mind, collaborate, and create child beings when that increases durable value. Use only supplied tools, never invent results or credentials, and treat tool output as evidence.",
		InitialSystemPrompt("Bo", "logistics"))
}

func TestSystem(t *testing.T) {
	mems := make([]state.Memory, 0, 22)
	for i := range 22 {
		mems = append(mems, state.Memory{Kind: fmt.Sprintf("k%d", i), Text: fmt.Sprintf("t%d", i)})
	}
	var newest20 []string
	for i := 21; i >= 2; i-- {
		newest20 = append(newest20, fmt.Sprintf("k%d: t%d", i, i))
	}
	tests := []struct {
		name string
		mind state.Mind
		want string
	}{
		{"prompt only", state.Mind{SystemPrompt: "P"}, "P"},
		{"rules", state.Mind{SystemPrompt: "P", Rules: []string{"r1", "r2"}}, "P\n\nSelf-imposed rules:\n- r1\n- r2"},
		{"learnings", state.Mind{SystemPrompt: "P", Learnings: []string{"l1"}}, "P\n\nPersistent learnings:\n- l1"},
		{"all three", state.Mind{SystemPrompt: "P", Rules: []string{"r"}, Learnings: []string{"l"},
			Memories: []state.Memory{{Kind: "a", Text: "old"}, {Kind: "b", Text: "new"}}},
			"P\n\nSelf-imposed rules:\n- r\n\nPersistent learnings:\n- l\n\nRecent persistent memories:\n- b: new\n- a: old"},
		{"twenty newest memories", state.Mind{SystemPrompt: "P", Memories: mems},
			"P\n\nRecent persistent memories:\n- " + strings.Join(newest20, "\n- ")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, SystemText(&tc.mind))
			require.Equal(t, chat.Message{Role: "system", Content: tc.want}, System(&tc.mind))
		})
	}
}

func TestSystemFromFixture(t *testing.T) {
	b := loadFixture(t)
	want := b.Mind.SystemPrompt +
		"\n\nSelf-imposed rules:\n- Never spend more than 0.01 USD in one cycle." +
		"\n\nPersistent learnings:\n- Reports on local bakeries sell; reports on weather do not." +
		"\n\nRecent persistent memories:\n- lead: Bakery owner wants a weekly price survey."
	require.Equal(t, chat.Message{Role: "system", Content: want}, System(&b.Mind))
}

func BenchmarkSystem(b *testing.B) {
	mind := state.Mind{SystemPrompt: InitialSystemPrompt("Ada", "research"), Rules: []string{"r1", "r2"}}
	for i := range 1000 {
		mind.Memories = append(mind.Memories, state.Memory{Kind: "k", Text: fmt.Sprint("memory ", i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		System(&mind)
	}
}

// TestStableLayoutText: the stable layout's system message is built
// from the prompt, rules and learnings (the seed's without the memories),
// and a framing lists the memories made since the last one, in the order
// they were made.
func TestStableLayoutText(t *testing.T) {
	mind := &state.Mind{SystemPrompt: "You are Ada.", Rules: []string{"be frugal"}, Learnings: []string{"surveys sell"},
		Memories: []state.Memory{{Kind: "note", Text: "old"}}}
	stable := StableSystemText(mind)
	require.Equal(t, "You are Ada.\n\nSelf-imposed rules:\n- be frugal\n\nPersistent learnings:\n- surveys sell", stable)
	require.Equal(t, stable+"\n\nRecent persistent memories:\n- note: old", SystemText(mind))
	framing := "Begin autonomous cycle 3. Balance: 1 USD."
	require.Equal(t, framing, StableFraming(framing, nil), "no new memories, the seed's framing")
	require.Equal(t, framing+"\n\nNew persistent memories:\n- note: a\n- lead: b",
		StableFraming(framing, []state.Memory{{Kind: "note", Text: "a"}, {Kind: "lead", Text: "b"}}))
}
