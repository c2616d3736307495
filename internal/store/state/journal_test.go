package state

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

var at = Time{time.Date(2026, 8, 24, 22, 5, 13, 100000000, time.UTC)}

// mustParse is money.Parse for an amount the test writes down; the tests
// of state cannot use testkit, which imports state.
func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// CostDebited is the reference runtime's debit, all of it API spending:
// a cost_debited with its amount alone.
func CostDebited(at Time, cycle uint64, amount money.Amount) Event {
	return Debited(at, cycle, amount, money.Zero, 0)
}

func withSeq(e Event, seq uint64) Event { e.Seq = seq; return e }

func stamped(e Event) Event { e.At, e.Cycle = at, 4; return e }

func toolStep() Event {
	e := ToolFinished(at, 4, "most_send_message", "success")
	e.Chat = &chat.Message{Role: chat.RoleTool, Content: "{}", ToolCallID: "c1", Name: "most_send_message"}
	e.Action = &Action{Cycle: 4, Tool: "most_send_message", Status: "success", At: at}
	e.Created = &CreatedResources{MessageIDs: []string{"m1"}}
	return e
}

func TestEventShapes(t *testing.T) {
	const ts = `"at":"2026-08-24T22:05:13.100000Z"`
	tests := []struct {
		e    Event
		want string
	}{
		{Started(at), `{"type":"started",` + ts + `}`},
		{CycleStarted(at, 0), `{"type":"cycle_started",` + ts + `,"cycle":0}`},
		{ModelCompleted(at, 3, chat.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234}),
			`{"type":"model_completed",` + ts + `,"cycle":3,"usage":{"prompt_tokens":1200,"completion_tokens":34,"total_tokens":1234}}`},
		{CostDebited(at, 3, money.Zero), `{"type":"cost_debited",` + ts + `,"cycle":3,"amount":"0"}`},
		{CostDebited(at, 3, mustParse("0.000034277778")), `{"type":"cost_debited",` + ts + `,"cycle":3,"amount":"0.000034277778"}`},
		{ToolFinished(at, 3, "finance__sell", "success"), `{"type":"tool_finished",` + ts + `,"cycle":3,"tool":"finance__sell","status":"success"}`},
		{RevenueCredited(at, 3, mustParse("2.5"), "finance__sell"), `{"type":"revenue_credited",` + ts + `,"cycle":3,"amount":"2.5","source":"finance__sell"}`},
		{Warning(at, 3, "maximum tool rounds reached"), `{"type":"warning",` + ts + `,"cycle":3,"message":"maximum tool rounds reached"}`},
		{Stopped(at, 3, StatusStopped, ""), `{"type":"stopped",` + ts + `,"cycle":3,"status":"stopped"}`},
		{Stopped(at, 3, StatusExhausted, "balance 0.0042 USD cannot pay the next completion's reserve 0.0061 USD"), `{"type":"stopped",` + ts + `,"cycle":3,"status":"exhausted","reason":"balance 0.0042 USD cannot pay the next completion's reserve 0.0061 USD"}`},
		// The write-ahead fields (docs/state.md#the-journal).
		{withSeq(CycleStarted(at, 4, chat.Message{Role: chat.RoleUser, Content: "Begin autonomous cycle 4."}), 7),
			`{"type":"cycle_started","seq":7,` + ts + `,"cycle":4,"messages":[{"role":"user","content":"Begin autonomous cycle 4."}]}`},
		{ModelCompleted(at, 4, chat.Usage{TotalTokens: 5}, chat.Message{Role: chat.RoleAssistant, Content: "hi"}),
			`{"type":"model_completed",` + ts + `,"cycle":4,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":5},"message":{"role":"assistant","content":"hi"}}`},
		{Debited(at, 4, mustParse("0.25"), mustParse("0.5"), 5),
			`{"type":"cost_debited",` + ts + `,"cycle":4,"amount":"0.75","api":"0.25","instance":"0.5","tokens":5}`},
		{toolStep(), `{"type":"tool_finished",` + ts + `,"cycle":4,"tool":"most_send_message","status":"success","message":{"role":"tool","content":"{}","tool_call_id":"c1","name":"most_send_message"},"action":{"cycle":4,"tool":"most_send_message","status":"success","at":"2026-08-24T22:05:13.100000Z"},"created":{"chat_ids":[],"message_ids":["m1"]}}`},
		{Event{Type: EventWarning, At: at, Cycle: 4, Message: "storage unavailable: disk full", Repeats: 3},
			`{"type":"warning",` + ts + `,"cycle":4,"message":"storage unavailable: disk full","repeats":3}`},
		{stamped(MemoryAdded(Memory{ID: "m", Kind: "lead", Text: "bakery", CreatedAt: at})),
			`{"type":"memory_added",` + ts + `,"cycle":4,"memory":{"id":"m","kind":"lead","text":"bakery","created_at":"2026-08-24T22:05:13.100000Z"}}`},
		{stamped(PromptSet("be brief")), `{"type":"prompt_set",` + ts + `,"cycle":4,"text":"be brief"}`},
		{stamped(RuleAdded("be frugal")), `{"type":"rule_added",` + ts + `,"cycle":4,"text":"be frugal"}`},
		{stamped(LearningAdded("bakeries pay")), `{"type":"learning_added",` + ts + `,"cycle":4,"text":"bakeries pay"}`},
		{stamped(ModelSwitched("gpt-a")), `{"type":"model_switched",` + ts + `,"cycle":4,"model":"gpt-a"}`},
		{TierChanged(at, 4, 2, mustParse("0.98")), `{"type":"tier_changed",` + ts + `,"cycle":4,"tier":2,"remaining":"0.98"}`},
		{TierChanged(at, 5, 0, mustParse("1.2")), `{"type":"tier_changed",` + ts + `,"cycle":5,"tier":0,"remaining":"1.2"}`},
		{stamped(ChildAdded(Child{ID: "c", Name: "Bo", Ticker: "BO", StateDir: "/s/children/c", CreatedAt: at, Status: StatusRunning})),
			`{"type":"child_added",` + ts + `,"cycle":4,"child":{"id":"c","name":"Bo","ticker":"BO","state_dir":"/s/children/c","created_at":"2026-08-24T22:05:13.100000Z","status":"running"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.e.Type, func(t *testing.T) {
			t.Helper()
			got, err := json.Marshal(tt.e)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			var back Event
			require.NoError(t, json.Unmarshal(got, &back))
			again, err := json.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(again))
		})
	}
	_, err := json.Marshal(Event{Type: "bogus"})
	assert.ErrorContains(t, err, `unknown journal event type "bogus"`)
}

func TestJournalAppendAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	j, err := OpenJournal(path, at, 0)
	require.NoError(t, err)
	assert.Zero(t, j.Repaired())
	events := []Event{Started(at), CycleStarted(at, 1), CostDebited(at, 1, mustParse("0.01")), Stopped(at, 1, StatusStopped, "")}
	for _, e := range events {
		require.NoError(t, j.Append(e))
	}
	require.NoError(t, j.Close())

	got, err := ReadJournal(path)
	require.NoError(t, err)
	require.Len(t, got, len(events))
	for i := range events {
		assert.Equal(t, events[i].Type, got[i].Type)
		assert.True(t, events[i].At.Equal(got[i].At.Time))
		assert.True(t, events[i].Amount.Equal(got[i].Amount))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(data), "\n"))

	// Reopening appends after what is there.
	j, err = OpenJournal(path, at, 1)
	require.NoError(t, err)
	require.NoError(t, j.Append(Started(at)))
	require.NoError(t, j.Close())
	got, err = ReadJournal(path)
	require.NoError(t, err)
	assert.Len(t, got, 5)
}

func TestJournalTornLineRepaired(t *testing.T) {
	tests := []struct {
		name string
		tail string // bytes after the last whole line
	}{
		{"half an event", `{"type":"cost_debited","at":"2026-08-24T22:05:13.1`},
		{"one byte", `{`},
		{"zeros", "\x00\x00\x00\x00"},
		{"long", `{"type":"warning","message":"` + strings.Repeat("x", 200<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), JournalFile)
			whole := `{"type":"started","at":"2026-08-24T22:05:13.100000Z"}` + "\n"
			require.NoError(t, os.WriteFile(path, []byte(whole+tt.tail), FileMode))
			_, err := ReadJournal(path)
			require.ErrorIs(t, err, ErrTornLine)

			j, err := OpenJournal(path, at, 9)
			require.NoError(t, err)
			assert.Equal(t, int64(len(tt.tail)), j.Repaired())
			require.NoError(t, j.Append(CycleStarted(at, 10)))
			require.NoError(t, j.Close())

			got, err := ReadJournal(path)
			require.NoError(t, err)
			require.Len(t, got, 3)
			assert.Equal(t, EventStarted, got[0].Type)
			assert.Equal(t, EventWarning, got[1].Type)
			assert.Equal(t, uint64(9), got[1].Cycle)
			assert.Contains(t, got[1].Message, "torn last line")
			assert.Equal(t, EventCycleStarted, got[2].Type)
		})
	}
}

func TestJournalTornOnlyLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"sta`), FileMode))
	j, err := OpenJournal(path, at, 0)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	got, err := ReadJournal(path)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, EventWarning, got[0].Type)
}

func TestReadJournalRefusesGarbageLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	require.NoError(t, os.WriteFile(path, []byte("{\"type\":\"started\"}\nnot json\n"), FileMode))
	_, err := ReadJournal(path)
	assert.ErrorContains(t, err, "line 2")
}

func TestArchive(t *testing.T) {
	path := filepath.Join(t.TempDir(), ArchiveFile)
	a, err := OpenArchive(path)
	require.NoError(t, err)
	require.NoError(t, a.Append())
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "Begin autonomous cycle 1. <b>"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "x", Arguments: "{}"}}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Name: "x", Content: "line\nbreak"},
	}
	require.NoError(t, a.Append(msgs...))
	require.NoError(t, a.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, `{"role":"user","content":"Begin autonomous cycle 1. <b>"}`, lines[0])
	for i, l := range lines {
		var m chat.Message
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		assert.Equal(t, msgs[i], m)
	}

	// A torn archive line is left alone by the open (nothing is written
	// before a being's boot step) and cut by the first append.
	torn := append(bytes.Clone(data), `{"role":"us`...)
	require.NoError(t, os.WriteFile(path, torn, FileMode))
	a, err = OpenArchive(path)
	require.NoError(t, err)
	assert.Equal(t, int64(11), a.Repaired())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, torn, after, "the open wrote nothing")
	next := chat.Message{Role: chat.RoleUser, Content: "later"}
	require.NoError(t, a.Append(next))
	require.NoError(t, a.Close())
	after, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(data)+`{"role":"user","content":"later"}`+"\n", string(after))
}

// TestRotateGoesOnAfterAFailure: a rotation that fails (here the old
// segment's name is taken by a directory) is finished by the next call,
// and the journal then reads whole and in order across both segments.
func TestRotateGoesOnAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	j, err := OpenJournal(path, at, 0)
	require.NoError(t, err)
	defer j.Close()
	_, err = j.AppendStep([]Event{Started(at), CycleStarted(at, 1)})
	require.NoError(t, err)

	blocker := filepath.Join(dir, segmentName(1))
	require.NoError(t, os.Mkdir(blocker, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(blocker, "x"), []byte("x"), 0o600))
	require.Error(t, j.Rotate(), "the old segment's name is taken")
	require.NoError(t, os.RemoveAll(blocker))
	require.NoError(t, j.Rotate(), "the second call finishes the rotation")

	_, err = j.AppendStep([]Event{Stopped(at, 1, StatusStopped, "")})
	require.NoError(t, err)
	segs, err := Segments(dir)
	require.NoError(t, err)
	require.Equal(t, []string{blocker, path}, segs)
	all, err := ReadAll(dir)
	require.NoError(t, err)
	var seqs []uint64
	for _, e := range all {
		seqs = append(seqs, e.Seq)
	}
	require.Equal(t, []uint64{1, 2, 3}, seqs)
}

// TestReadJournalRefusesLinesThatAreNotObjects: null, a list or a
// string would decode into an empty event; the journal refuses them.
func TestReadJournalRefusesLinesThatAreNotObjects(t *testing.T) {
	for _, line := range []string{"null", "[]", `"started"`, "1"} {
		path := filepath.Join(t.TempDir(), JournalFile)
		good := `{"type":"started","at":"2026-08-24T22:05:12.573198Z"}`
		require.NoError(t, os.WriteFile(path, []byte(good+"\n"+line+"\n"), 0o600))
		events, err := ReadJournal(path)
		require.Error(t, err, line)
		assert.Contains(t, err.Error(), "line 2: not a JSON object")
		assert.Len(t, events, 1, "the events before it are returned")
	}
}

// TestEventFieldsMatchEncodingJSON holds the journal's field writer to
// encoding/json: every value it writes directly comes out as json.Marshal
// would write it.
func TestEventFieldsMatchEncodingJSON(t *testing.T) {
	values := []any{
		"", "success", "maximum tool rounds reached", `quote " and \ back`, "<tag> & more", "tab\there",
		"é unicode", "\u2028", "bad \xff utf8", uint64(0), uint64(1<<64 - 1), 0, -7, 1 << 40,
		Time{Time: time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)}, mustParse("0.000036"),
		mustParse("-1.5"), money.Zero, chat.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
		&chat.Message{Role: chat.RoleTool, Content: "<b>"}, []chat.Message(nil),
	}
	for _, v := range values {
		var w objectWriter
		w.field("k", v)
		got, err := w.close()
		require.NoError(t, err)
		want, err := json.Marshal(map[string]any{"k": v})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%#v", v)
	}
}

// TestReadAllPast: past a checkpoint's seq, ReadAllPast gives the same
// money totals as ReadAll over two segments and a reference-shaped
// (seq-less) line, the events after it whole, and the same refusals.
func TestReadAllPast(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	j, err := s.OpenJournal(at, 0)
	require.NoError(t, err)
	steps := [][]Event{
		{CycleStarted(at, 1, chat.Message{Role: chat.RoleUser, Content: "Begin autonomous cycle 1."})},
		{ModelCompleted(at, 1, chat.Usage{TotalTokens: 5}, chat.Message{Role: chat.RoleAssistant, Content: "hi"}), Debited(at, 1, mustParse("0.25"), mustParse("0.5"), 5)},
		{RevenueCredited(at, 1, mustParse("2.5"), "finance__sell")},
		{toolStep()},
		{CostDebited(at, 2, mustParse("0.000001"))},
		{RevenueCredited(at, 2, mustParse("0.1"), "finance__sell"), toolStep()},
	}
	for i, step := range steps {
		_, err := j.AppendStep(step)
		require.NoError(t, err)
		if i == 2 {
			require.NoError(t, j.Rotate()) // the first events in an older segment
		}
	}
	require.NoError(t, j.Close())
	all, err := ReadAll(dir)
	require.NoError(t, err)
	for _, past := range []uint64{0, 1, 3, 4, 6, uint64(len(all)), 1 << 62} {
		got, err := ReadAllPast(dir, past)
		require.NoError(t, err)
		require.Len(t, got, len(all))
		assert.Equal(t, Totals(all), Totals(got), "past %d", past)
		for i := range all {
			assert.Equal(t, all[i].Seq, got[i].Seq)
			if all[i].Seq > past {
				assert.Equal(t, all[i], got[i], "event %d is whole past %d", all[i].Seq, past)
			}
		}
	}

	// A reference journal: no seq, counted by position.
	ref := filepath.Join(t.TempDir(), JournalFile)
	require.NoError(t, os.WriteFile(ref, []byte(`{"type":"cost_debited","at":"2026-08-24T22:05:13.1Z","cycle":1,"amount":"0.5"}`+"\n"+
		`{"type":"warning","at":"2026-08-24T22:05:13.1Z","cycle":1,"message":"x"}`+"\n"), FileMode))
	light, err := readJournal(ref, 1)
	require.NoError(t, err)
	require.Len(t, light, 2)
	assert.Equal(t, []uint64{1, 2}, []uint64{light[0].Seq, light[1].Seq})
	assert.Equal(t, "x", light[1].Message, "past the checkpoint, whole")
	assert.Equal(t, "0.5", light[0].Amount.String())

	require.NoError(t, os.WriteFile(ref, []byte(`{"type":"warning"}`+"\n"+`[1]`+"\n"), FileMode))
	_, err = readJournal(ref, 5)
	assert.ErrorIs(t, err, errNotObject, "the light read refuses what ReadJournal refuses")
}

// TestReadHeadMatchesUnmarshal holds the light read of a journal line to
// decoding its eventHead with encoding/json: the same fields, and an
// error for the same lines.
func TestReadHeadMatchesUnmarshal(t *testing.T) {
	lines := []string{
		`{"type":"cost_debited","seq":7,"at":"2026-08-24T22:05:13.1Z","cycle":3,"amount":"0.75","api":"0.25","instance":"0.5","tokens":5}`,
		`{"type":"revenue_credited","seq":8,"cycle":3,"amount":"2.5","source":"finance__sell"}`,
		`{"type":"endowment_granted","seq":9,"cycle":3,"child_id":"c","amount":1.5,"child":{"id":"c"}}`,
		`{"type":"warning","seq":10,"cycle":3,"message":"a \"quoted\" {brace}"}`,
		`{"cycle":3,"amount":"1","type":"cost_debited"}`, // no seq, another order
		`{"type":"tool_finished","seq":11,"cycle":3,"message":{"role":"tool","content":"{\"amount\":\"9\"}"}}`,
		`{"type":"cost_d\u0065bited","seq":12,"amount":"0.1"}`, // an escaped type
		`{"type":"cost_debited","seq":"13","amount":"0.1"}`,    // a seq of the wrong type
		`{"type":"cost_debited","seq":14,"amount":"ten"}`,      // an amount that is no decimal
		`{"type":"cost_debited","seq":-1}`,
		`{"type":"x","seq":1`,                             // torn
		`{"Type":"cost_debited","SEQ":15,"Amount":"0.2"}`, // keys in another case, as encoding/json matches them
	}
	for _, line := range lines {
		var want eventHead
		wantErr := json.Unmarshal([]byte(line), &want)
		got, err := readHead([]byte(line))
		if wantErr != nil {
			assert.Error(t, err, line)
			continue
		}
		require.NoError(t, err, line)
		assert.Equal(t, want.Type, got.Type, line)
		assert.Equal(t, want.Seq, got.Seq, line)
		assert.Equal(t, want.Cycle, got.Cycle, line)
		if got.Type == EventCostDebited || got.Type == EventRevenueCredited || got.Type == EventEndowmentGranted {
			assert.True(t, want.Amount.Equal(got.Amount), line)
		}
	}
}
