package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/test/testkit"
)

var epoch = time.Date(2026, 8, 24, 22, 5, 13, 100000000, time.UTC)

// testTools returns tools over a fresh workspace with a counting clock and
// id generator.
func testTools(t *testing.T, env Env) *Tools {
	t.Helper()
	if env.Workspace == "" {
		env.Workspace = t.TempDir()
	}
	n := 0
	if env.NewID == nil {
		env.NewID = func() string { n++; return fmt.Sprintf("id-%d", n) }
	}
	if env.Now == nil {
		env.Now = func() time.Time { return epoch.Add(time.Duration(n) * time.Second) }
	}
	tools, err := New(env)
	require.NoError(t, err)
	return tools
}

func args(kv ...string) json.RawMessage {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// requireOutcome checks status, error code and the exact content.
func requireOutcome(t *testing.T, o outcome.Outcome, status, code, content string) {
	t.Helper()
	require.Equal(t, status, o.Status, "content %s", o.Content)
	require.Equal(t, code, o.ErrorCode)
	if content != "" {
		require.JSONEq(t, content, string(o.Content))
	}
}

// call runs one tool, applies the mind changes it returns to mind the
// way a being does once they are durable, and returns its outcome; an
// effect is not carried out (TestSpawnChild looks at it itself).
func call(tools *Tools, mind *state.Mind, name string, a json.RawMessage) outcome.Outcome {
	res := tools.Call(Request{Name: name, Args: a, Mind: mind})
	if mind != nil {
		b := state.Being{Mind: *mind}
		for _, c := range res.Changes {
			b.Apply(c)
		}
		*mind = b.Mind
	}
	return res.Outcome
}

func invalid(key string) string { return `{"message":"` + key + ` is invalid"}` }

func TestArgumentValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		tool string
		args string
		key  string // "" means the not-an-object failure
	}{
		{MemoryRemember, `[]`, ""},
		{MemoryRemember, `"kind"`, ""},
		{MemoryRemember, `null`, ""},
		{MemoryRemember, ``, ""},
		{MemoryRemember, `{"kind":"a"`, ""},
		{MemoryRemember, `{"text":"t"}`, "kind"},
		{MemoryRemember, `{"kind":"a"}`, "text"},
		{MemoryRemember, `{"kind":1,"text":"t"}`, "kind"},
		{MemoryRemember, `{"kind":"   ","text":"t"}`, "kind"},
		{MemoryRemember, `{"kind":"a\u0007b","text":"t"}`, "kind"},
		{MemoryRemember, `{"kind":"a","text":"line\nbreak"}`, "text"},
		{MemoryRemember, `{"kind":"a","text":"x\u0085y"}`, "text"},
		{MemoryRemember, string(args("kind", long(65), "text", "t")), "kind"},
		{MemoryRemember, string(args("kind", "k", "text", long(16<<10+1))), "text"},
		{MemoryRemember, `{"kind":"a","text":"t","extra":"x"}`, "extra"},
		{MemoryRecall, string(args("query", long(1025))), "query"},
		{SelfSetPrompt, string(args("prompt", long(64<<10+1))), "prompt"},
		{SelfAddRule, string(args("rule", long(4<<10+1))), "rule"},
		{SelfAddLearning, string(args("learning", long(8<<10+1))), "learning"},
		{SelfSwitchModel, string(args("model", long(257))), "model"},
		{SpawnChild, string(args("name", long(129), "ticker", "T", "specialty", "s")), "name"},
		{SpawnChild, string(args("name", "n", "ticker", long(33), "specialty", "s")), "ticker"},
		{SpawnChild, string(args("name", "n", "ticker", "T", "specialty", long(257))), "specialty"},
		{SpawnChild, string(args("name", "n", "ticker", "T")), "specialty"},
		{FileRead, `{"path":""}`, "path"},
		{FileRead, string(args("path", long(MaxPathBytes+1))), "path"},
		{FileWrite, `{"path":"a"}`, "content"},
		{FileWrite, `{"path":"a","content":"x\u0000y"}`, "content"},
		{FileWrite, string(args("path", "a", "content", long(MaxFileBytes+1))), "content"},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.key, func(t *testing.T) {
			tools := testTools(t, Env{})
			b := &state.Being{}
			o := call(tools, &b.Mind, tc.tool, json.RawMessage(tc.args))
			want := `{"message":"arguments must be a JSON object"}`
			if tc.key != "" {
				want = invalid(tc.key)
			}
			requireOutcome(t, o, outcome.Failed, CodeInvalidArguments, want)
			require.Equal(t, state.Mind{}, b.Mind, "a refused call changes nothing")
		})
	}
}

func TestBoundsAreInclusive(t *testing.T) {
	tools := testTools(t, Env{})
	b := &state.Being{}
	x := func(n int) string { return strings.Repeat("é", n/2) } // two bytes a rune
	requireOutcome(t, call(tools, &b.Mind, MemoryRemember, args("kind", x(64), "text", x(16<<10))), outcome.Success, "", "")
	requireOutcome(t, call(tools, &b.Mind, MemoryRecall, args("query", x(1024))), outcome.Success, "", "")
	requireOutcome(t, call(tools, &b.Mind, SelfSetPrompt, args("prompt", x(64<<10))), outcome.Success, "", `{"updated":true}`)
	requireOutcome(t, call(tools, &b.Mind, SelfAddRule, args("rule", "  "+x(4<<10)+"\t")), outcome.Success, "", "")
	require.Equal(t, x(4<<10), b.Mind.Rules[0], "text arguments are trimmed before the bound")
}

func TestUnknownTool(t *testing.T) {
	tools := testTools(t, Env{})
	o := call(tools, &state.Mind{}, "singularity_nope", json.RawMessage(`{}`))
	requireOutcome(t, o, outcome.Failed, CodeUnknownTool, `{"message":"tool is not in the current catalog"}`)
}

func TestMemories(t *testing.T) {
	tools := testTools(t, Env{})
	b := &state.Being{}
	o := call(tools, &b.Mind, MemoryRemember, args("kind", " lead ", "text", "Bakery owner wants a survey"))
	requireOutcome(t, o, outcome.Success, "", `{"memory_id":"id-1"}`)
	require.Equal(t, []state.Memory{{ID: "id-1", Kind: "lead", Text: "Bakery owner wants a survey", CreatedAt: state.Time{Time: epoch.Add(time.Second)}}}, b.Mind.Memories)

	call(tools, &b.Mind, MemoryRemember, args("kind", "note", "text", "weather is dull"))
	call(tools, &b.Mind, MemoryRemember, args("kind", "BAKERY", "text", "second bakery"))

	o = call(tools, &b.Mind, MemoryRecall, args("query", "bAkErY"))
	requireOutcome(t, o, outcome.Success, "", `{"memories":[
		{"id":"id-3","kind":"BAKERY","text":"second bakery","created_at":"2026-08-24T22:05:16.100000Z"},
		{"id":"id-1","kind":"lead","text":"Bakery owner wants a survey","created_at":"2026-08-24T22:05:14.100000Z"}]}`)
	o = call(tools, &b.Mind, MemoryRecall, args("query", "note"))
	requireOutcome(t, o, outcome.Success, "", `{"memories":[{"id":"id-2","kind":"note","text":"weather is dull","created_at":"2026-08-24T22:05:15.100000Z"}]}`)
	o = call(tools, &b.Mind, MemoryRecall, args("query", "absent"))
	requireOutcome(t, o, outcome.Success, "", `{"memories":[]}`)
}

func TestMemoryLimits(t *testing.T) {
	tools := testTools(t, Env{})
	b := &state.Being{}
	for i := range MaxMemories + 5 {
		o := call(tools, &b.Mind, MemoryRemember, args("kind", "k", "text", fmt.Sprint("m", i)))
		require.Equal(t, outcome.Success, o.Status)
	}
	require.Len(t, b.Mind.Memories, MaxMemories)
	require.Equal(t, "m5", b.Mind.Memories[0].Text, "the oldest five dropped off")
	require.Equal(t, fmt.Sprint("m", MaxMemories+4), b.Mind.Memories[MaxMemories-1].Text)

	o := call(tools, &b.Mind, MemoryRecall, args("query", "M"))
	var got struct{ Memories []state.Memory }
	require.NoError(t, json.Unmarshal(o.Content, &got))
	require.Len(t, got.Memories, RecallLimit)
	require.Equal(t, fmt.Sprint("m", MaxMemories+4), got.Memories[0].Text, "newest first")
	require.Equal(t, fmt.Sprint("m", MaxMemories+4-RecallLimit+1), got.Memories[RecallLimit-1].Text)
}

func TestSelfTools(t *testing.T) {
	tools := testTools(t, Env{})
	b := &state.Being{Mind: state.Mind{SystemPrompt: "old", Rules: []string{"r0"}}}
	requireOutcome(t, call(tools, &b.Mind, SelfSetPrompt, args("prompt", " new prompt ")), outcome.Success, "", `{"updated":true}`)
	requireOutcome(t, call(tools, &b.Mind, SelfAddRule, args("rule", "be frugal")), outcome.Success, "", `{"rule":"be frugal"}`)
	requireOutcome(t, call(tools, &b.Mind, SelfAddLearning, args("learning", "bakeries pay")), outcome.Success, "", `{"learning":"bakeries pay"}`)
	requireOutcome(t, call(tools, &b.Mind, SelfAddLearning, args("learning", "weather does not")), outcome.Success, "", `{"learning":"weather does not"}`)
	require.Equal(t, "new prompt", b.Mind.SystemPrompt)
	require.Equal(t, []string{"r0", "be frugal"}, b.Mind.Rules)
	require.Equal(t, []string{"bakeries pay", "weather does not"}, b.Mind.Learnings)
}

func TestSwitchModel(t *testing.T) {
	listed := []string{"gpt-a", "claude-b"}
	tests := []struct {
		name       string
		advertised []string
		model      string
		ok         bool
	}{
		{"any", nil, "any", true},
		{"vision selector", nil, "any-vision-capable", true},
		{"best", nil, "best", true},
		{"task prefix", nil, "task:coding", true},
		{"listed model", listed, "claude-b", true},
		{"listed model trimmed", listed, "  gpt-a ", true},
		{"unlisted model", listed, "gpt-z", false},
		{"case matters", listed, "GPT-A", false},
		{"no listing", nil, "gpt-a", false},
		{"empty listing", []string{}, "gpt-a", false},
		{"selector lookalike", listed, "Any", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := testTools(t, Env{})
			mind := &state.Mind{CurrentModel: "any"}
			res := tools.Call(Request{Name: SelfSwitchModel, Args: args("model", tc.model), Mind: mind, Advertised: tc.advertised})
			require.Equal(t, "any", mind.CurrentModel, "the being, not the tool, switches the model")
			if tc.ok {
				want := strings.TrimSpace(tc.model)
				requireOutcome(t, res.Outcome, outcome.Success, "", `{"model":"`+want+`"}`)
				require.Equal(t, []state.Event{state.ModelSwitched(want)}, res.Changes)
				return
			}
			requireOutcome(t, res.Outcome, outcome.Failed, CodeModelUnavailable, `{"message":"Brama does not advertise that model"}`)
			require.Empty(t, res.Changes)
		})
	}
}

// TestSwitchModelElsewhere: with a gateway other than Brama, selectors
// are refused and only listed ids accepted (docs/brama.md#model-selection).
func TestSwitchModelElsewhere(t *testing.T) {
	tests := []struct {
		model  string
		listed []string
		ok     bool
	}{
		{"any", []string{"gpt-a"}, false},
		{"task:coding", []string{"gpt-a"}, false},
		{"gpt-a", []string{"gpt-a"}, true},
		{"best", []string{"best"}, true}, // a listed id, whatever it looks like
	}
	for _, tc := range tests {
		tools := testTools(t, Env{})
		res := tools.Call(Request{Name: SelfSwitchModel, Args: args("model", tc.model), Mind: &state.Mind{CurrentModel: "gpt-a"}, Advertised: tc.listed, NoSelectors: true})
		if tc.ok {
			requireOutcome(t, res.Outcome, outcome.Success, "", `{"model":"`+tc.model+`"}`)
			continue
		}
		requireOutcome(t, res.Outcome, outcome.Failed, CodeModelUnavailable, `{"message":"Brama does not advertise that model"}`)
		require.Empty(t, res.Changes, tc.model)
	}
}

func TestSpawnChild(t *testing.T) {
	tests := []struct {
		name    string
		started ChildStarted
		err     error
		code    string
		content string
		status  string
	}{
		{"Bo", ChildStarted{Actor: "family/being-ada/being-bo", StateDir: "/s/children/id-1"}, nil,
			"", `{"child_id":"id-1","actor":"family/being-ada/being-bo"}`, state.StatusRunning},
		{"later", ChildStarted{Actor: "family/being-ada/being-later", StateDir: "/s/children/id-1", Status: state.StatusStarting}, nil,
			"", `{"child_id":"id-1","actor":"family/being-ada/being-later"}`, state.StatusStarting},
		{"nodir", ChildStarted{}, fmt.Errorf("mkdir: %w", ErrChildState),
			CodeChildState, `{"message":"child state directory could not be created"}`, ""},
		{"crash", ChildStarted{}, errors.New("actor did not start"),
			CodeChildSpawn, `{"message":"child being could not be started"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := testTools(t, Env{})
			mind := &state.Mind{}
			res := tools.Call(Request{Name: SpawnChild, Args: args("name", tc.name, "ticker", " BO ", "specialty", "logistics", "endowment_usd", "0.25"),
				Mind: mind, Available: testkit.USD("0.25")})
			spawn, ok := res.Effect.(Spawn)
			require.True(t, ok, "spawn_child leaves the spawn to the being: %#v", res.Effect)
			require.Equal(t, "0.25", spawn.Child.Endowment.String())
			spawn.Child.Endowment = money.Zero
			require.Equal(t, ChildRequest{ID: "id-1", Name: tc.name, Ticker: "BO", Specialty: "logistics", Endowment: money.Zero}, spawn.Child)
			require.Empty(t, res.Changes, "nothing is recorded before the being spawned")

			done := spawn.Finish(tc.started, tc.err)
			if tc.code != "" {
				requireOutcome(t, done.Outcome, outcome.Failed, tc.code, tc.content)
				require.Empty(t, done.Changes)
				return
			}
			requireOutcome(t, done.Outcome, outcome.Success, "", tc.content)
			require.Len(t, done.Changes, 1)
			require.Equal(t, state.EventChildAdded, done.Changes[0].Type)
			c := *done.Changes[0].Child
			require.Equal(t, "id-1", c.ID)
			require.Equal(t, tc.name, c.Name)
			require.Equal(t, "BO", c.Ticker)
			require.Equal(t, tc.status, c.Status)
			require.Equal(t, "/s/children/id-1", c.StateDir)
			require.Equal(t, epoch.Add(time.Second), c.CreatedAt.Time)
			require.Equal(t, "logistics", c.Specialty)
		})
	}

	// Invalid arguments are refused before any effect.
	res := testTools(t, Env{}).Call(Request{Name: SpawnChild, Args: args("name", "n", "ticker", "T"), Mind: &state.Mind{}})
	requireOutcome(t, res.Outcome, outcome.Failed, CodeInvalidArguments, invalid("specialty"))
	require.Nil(t, res.Effect)
}

func TestSpawnChildEndowment(t *testing.T) {
	tests := []struct {
		name      string
		funding   Funding
		endowment string // raw JSON; "" leaves the key out
		available string
		want      string // the endowment, or the failure code
	}{
		{"string", Transfer, `"0.5"`, "1", "0.5"},
		{"all of it", Transfer, `"1"`, "1", "1"},
		{"spaces", Transfer, `" 0.000000000001 "`, "1", "0.000000000001"},
		{"number literal", Transfer, `0.25`, "1", "0.25"},
		{"exponent", Transfer, `"2.5e-1"`, "1", "0.25"},
		{"too much", Transfer, `"1.000000000001"`, "1", CodeInsufficientFunds},
		{"nothing available", Transfer, `"0.01"`, "0", CodeInsufficientFunds},
		{"missing", Transfer, "", "1", CodeInvalidArguments},
		{"zero", Transfer, `"0"`, "1", CodeInvalidArguments},
		{"negative", Transfer, `"-0.5"`, "1", CodeInvalidArguments},
		{"thirteen places", Transfer, `"0.0000000000001"`, "1", CodeInvalidArguments},
		{"not a number", Transfer, `"ten"`, "1", CodeInvalidArguments},
		{"empty", Transfer, `""`, "1", CodeInvalidArguments},
		{"null", Transfer, `null`, "1", CodeInvalidArguments},
		{"object", Transfer, `{"usd":"1"}`, "1", CodeInvalidArguments},
		{"nan", Transfer, `"NaN"`, "1", CodeInvalidArguments},
		{"mint ignores it", Mint, `"5"`, "1", "0"},
		{"mint without it", Mint, "", "1", "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"name":"Bo","ticker":"BO","specialty":"logistics"`
			if tc.endowment != "" {
				raw += `,"endowment_usd":` + tc.endowment
			}
			raw += "}"
			res := testTools(t, Env{Funding: tc.funding}).Call(Request{Name: SpawnChild, Args: json.RawMessage(raw),
				Mind: &state.Mind{}, Available: testkit.USD(tc.available)})
			spawn, ok := res.Effect.(Spawn)
			if _, err := money.Parse(tc.want); err != nil {
				require.False(t, ok, "no spawn after a refusal")
				msg := invalid("endowment_usd")
				if tc.want == CodeInsufficientFunds {
					msg = `{"message":"endowment exceeds the available balance"}`
				}
				requireOutcome(t, res.Outcome, outcome.Failed, tc.want, msg)
				return
			}
			require.True(t, ok, "outcome %s", res.Outcome.Content)
			require.Equal(t, tc.want, spawn.Child.Endowment.String())
			rec := spawn.Record("/d")
			if tc.funding == Mint {
				require.Nil(t, rec.Endowment, "a minted child's record has no endowment")
			} else {
				require.Equal(t, tc.want, rec.Endowment.String())
			}
		})
	}
}

func BenchmarkRemember(b *testing.B) {
	tools, err := New(Env{Workspace: b.TempDir()})
	require.NoError(b, err)
	being := &state.Being{}
	a := args("kind", "lead", "text", "Bakery owner wants a weekly price survey.")
	b.ReportAllocs()
	for b.Loop() {
		call(tools, &being.Mind, MemoryRemember, a)
	}
}

func BenchmarkRecall(b *testing.B) {
	tools, err := New(Env{Workspace: b.TempDir()})
	require.NoError(b, err)
	being := &state.Being{}
	for i := range MaxMemories {
		call(tools, &being.Mind, MemoryRemember, args("kind", "k", "text", fmt.Sprint("memory number ", i)))
	}
	a := args("query", "NUMBER 9")
	b.ReportAllocs()
	for b.Loop() {
		call(tools, &being.Mind, MemoryRecall, a)
	}
}
