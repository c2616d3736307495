package journalview_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

var t0 = state.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}

// newBeing writes a being's state and journal in dir and returns its
// open journal.
func newBeing(t *testing.T, dir, name, starting string) *state.Journal {
	t.Helper()
	id := testkit.Identity()
	id.Name = name
	st := being.NewState(id, testkit.USD(starting), "m", t0)
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	require.NoError(t, err)
	j, err := store.OpenJournal(t0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

func step(t *testing.T, j *state.Journal, events ...state.Event) {
	t.Helper()
	_, err := j.AppendStep(events)
	require.NoError(t, err)
}

func TestFamilyAndValidID(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	newBeing(t, root, "Ada", "1")
	newBeing(t, filepath.Join(root, "children", "c-bo"), "Bo", "0.5")
	newBeing(t, filepath.Join(root, "children", "c-bo", "children", "c-di"), "Di", "0.25")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "children", "half-made"), 0o700)) // no state.json yet

	fam, err := journalview.Family(root)
	require.NoError(t, err)
	var got []string
	for _, b := range fam {
		got = append(got, b.Name+"/"+b.ID+"/"+b.Starting.String())
	}
	assert.Equal(t, []string{"Ada/agent-test/1", "Bo/c-bo/0.5", "Di/c-di/0.25"}, got)
	assert.Equal(t, []int{0, 1, 2}, []int{fam[0].Depth, fam[1].Depth, fam[2].Depth})

	for _, id := range []string{"", ".", "..", "../x", "a/b", strings.Repeat("x", 200)} {
		assert.False(t, journalview.ValidID(id), "%q", id)
	}
	assert.True(t, journalview.ValidID("c-di"))
	_, err = journalview.Family(filepath.Join(root, "missing"))
	assert.Error(t, err)
}

func TestFollowerAcrossRotationAndTornLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j := newBeing(t, dir, "Ada", "1")
	step(t, j, state.Started(t0), state.CycleStarted(t0, 1))
	f := journalview.NewFollower(dir)
	lines, err := f.Next()
	require.NoError(t, err)
	require.Len(t, lines, 2)
	assert.Equal(t, "started", lines[0].Head.Type)
	assert.Equal(t, uint64(2), lines[1].Head.Seq)

	// Nothing new, nothing returned.
	lines, err = f.Next()
	require.NoError(t, err)
	assert.Empty(t, lines)

	// A line half written is left for later.
	step(t, j, state.Warning(t0, 1, "one"))
	path := filepath.Join(dir, state.JournalFile)
	file, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = file.WriteString(`{"type":"warning","seq":4,"at":"2026-03-01T12:00:00.000000Z","cycle":1,"mess`)
	require.NoError(t, err)
	require.NoError(t, file.Close())
	lines, err = f.Next()
	require.NoError(t, err)
	require.Len(t, lines, 1)
	assert.Equal(t, uint64(3), lines[0].Head.Seq)

	// Reopening repairs the torn line; then a rotation: the follower
	// finishes the renamed segment and goes on with the new file.
	require.NoError(t, j.Close())
	store, err := state.Open(dir)
	require.NoError(t, err)
	j, err = store.OpenJournal(t0, 1)
	require.NoError(t, err)
	defer j.Close()
	step(t, j, state.Warning(t0, 1, "two"))
	require.NoError(t, j.Rotate())
	step(t, j, state.Warning(t0, 1, "three"))
	lines, err = f.Next()
	require.NoError(t, err)
	var msgs []string
	for _, l := range lines {
		var e state.Event
		require.NoError(t, json.Unmarshal(l.Raw, &e))
		msgs = append(msgs, e.Message)
	}
	assert.Equal(t, []string{"activity journal: removed a torn last line of 76 bytes", "two", "three"}, msgs)

	// A new follower reads every segment in order.
	all, err := journalview.NewFollower(dir).Next()
	require.NoError(t, err)
	assert.Len(t, all, 6)
	tail, err := journalview.Tail(dir, 2)
	require.NoError(t, err)
	require.Len(t, tail, 2)
	assert.Equal(t, uint64(6), tail[1].Head.Seq)
}

func TestSeries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j := newBeing(t, dir, "Ada", "1")
	step(t, j, state.Started(t0), state.CycleStarted(t0, 1))
	s := journalview.NewSeries(journalview.Being{Dir: dir, Starting: testkit.USD("1")}, 8)
	pts, err := s.Update()
	require.NoError(t, err)
	require.Len(t, pts, 1)
	assert.Equal(t, "1", pts[0].Balance)
	assert.Equal(t, t0.Time, pts[0].At.Time, "the start is when the being started")

	step(t, j, state.ModelCompleted(t0, 1, chat.Usage{}), state.Debited(t0, 1, testkit.USD("0.01"), testkit.USD("0.002"), 10))
	step(t, j, state.ToolFinished(t0, 1, "finance__x", "success"), state.RevenueCredited(t0, 1, testkit.USD("0.5"), "finance__x"))
	pts, err = s.Update()
	require.NoError(t, err)
	var got []string
	for _, p := range pts {
		got = append(got, p.Balance)
	}
	assert.Equal(t, []string{"1", "0.988", "1.488"}, got)

	// Thinning keeps the first and the newest, at most the bound.
	for range 40 {
		step(t, j, state.Debited(t0, 1, testkit.USD("0.001"), money.Zero, 1))
	}
	pts, err = s.Update()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(pts), 8)
	assert.Equal(t, "1", pts[0].Balance)
	assert.Equal(t, "1.448", pts[len(pts)-1].Balance)
}

// TestSeriesReadsGrants: a parent's endowment_granted (SPEC 7.7) lowers
// its balance in the series.
func TestSeriesReadsGrants(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	newBeing(t, dir, "Ada", "1")
	line := `{"type":"endowment_granted","seq":1,"at":"2026-03-01T12:00:00.000000Z","cycle":1,"child_id":"c","amount":"0.3"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, state.JournalFile), []byte(line), 0o600))
	pts, err := journalview.NewSeries(journalview.Being{Dir: dir, Starting: testkit.USD("1")}, 8).Update()
	require.NoError(t, err)
	require.Len(t, pts, 2)
	assert.Equal(t, "0.7", pts[1].Balance)
}

func TestTextAndJSON(t *testing.T) {
	mk := func(e state.Event) journalview.Line {
		e.Seq = 7
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		var h journalview.Head
		require.NoError(t, json.Unmarshal(raw, &h))
		return journalview.Line{Raw: raw, Head: h}
	}
	reply := chat.Message{Role: chat.RoleAssistant, Content: "All done, " + strings.Repeat("x", 100)}
	for _, tc := range []struct {
		e    state.Event
		want string
	}{
		{state.Started(t0), "2026-03-01T12:00:00.000Z Ada started seq=7"},
		{state.Debited(t0, 2, testkit.USD("0.0000365"), testkit.USD("0.01"), 42),
			"2026-03-01T12:00:00.000Z Ada cost_debited seq=7 cycle=2 amount=0.0100365 tokens=42"},
		{state.Debited(t0, 2, testkit.USD("0.0000365"), money.Zero, 0), "2026-03-01T12:00:00.000Z Ada cost_debited seq=7 cycle=2 amount=0.0000365"},
		{state.ToolFinished(t0, 2, "echo__echo", "failed"), "2026-03-01T12:00:00.000Z Ada tool_finished seq=7 cycle=2 tool=echo__echo status=failed"},
		{state.RevenueCredited(t0, 2, testkit.USD("0.05"), "finance__sell"), "2026-03-01T12:00:00.000Z Ada revenue_credited seq=7 cycle=2 amount=0.05 source=finance__sell"},
		{state.Warning(t0, 2, "a b"), `2026-03-01T12:00:00.000Z Ada warning seq=7 cycle=2 message="a b"`},
		{state.Stopped(t0, 2, state.StatusExhausted, "balance 0.0042 USD cannot pay the next completion's reserve 0.0061 USD"),
			`2026-03-01T12:00:00.000Z Ada stopped seq=7 cycle=2 status=exhausted reason="balance 0.0042 USD cannot pay the next completion's reserve 0.0061 USD"`},
		{state.Stopped(t0, 2, state.StatusStopped, ""), `2026-03-01T12:00:00.000Z Ada stopped seq=7 cycle=2 status=stopped`},
		{state.MemoryAdded(state.Memory{ID: "m1", Kind: "note", Text: "market opens"}), `0001-01-01T00:00:00.000Z Ada memory_added seq=7 cycle=0 kind=note text="market opens"`},
		{state.ModelCompleted(t0, 2, chat.Usage{PromptTokens: 3, CompletionTokens: 4}, reply),
			`2026-03-01T12:00:00.000Z Ada model_completed seq=7 cycle=2 prompt_tokens=3 completion_tokens=4 tool_calls=0 reply="All done, ` + strings.Repeat("x", 70) + `…"`},
		{state.Funded(t0, 2, testkit.USD("0.000000000001"), "top-up", "for rent"),
			`2026-03-01T12:00:00.000Z Ada funded seq=7 cycle=2 amount=0.000000000001 key=top-up note="for rent"`},
		{state.Funded(t0, 2, testkit.USD("1000000"), "k", ""), `2026-03-01T12:00:00.000Z Ada funded seq=7 cycle=2 amount=1000000 key=k`},
		{state.MessageReceived(t0, 2, state.InMessage{ID: "m1", From: "operator", Text: "sell now"}),
			`2026-03-01T12:00:00.000Z Ada message_received seq=7 cycle=2 id=m1 from=operator text="sell now"`},
		{state.MessageReceived(t0, 2, state.InMessage{ID: "m2", From: "c-1", Name: "Bo", Relation: "child", Text: "hi"}),
			`2026-03-01T12:00:00.000Z Ada message_received seq=7 cycle=2 id=m2 from=c-1 name=Bo relation=child text=hi`},
		{state.MessageSent(t0, 2, state.OutMessage{ID: "m3", To: "c-1", Text: "go"}), `2026-03-01T12:00:00.000Z Ada message_sent seq=7 cycle=2 id=m3 to=c-1 text=go`},
		{state.MessageDelivered(t0, 2, "m3"), `2026-03-01T12:00:00.000Z Ada message_delivered seq=7 cycle=2 id=m3`},
		{undelivered(state.MessageDelivered(t0, 2, "m4")), `2026-03-01T12:00:00.000Z Ada message_delivered seq=7 cycle=2 id=m4 reason=recipient_ended`},
		{state.Slept(t0, 2, state.Time{Time: t0.Add(time.Minute)}, true), `2026-03-01T12:00:00.000Z Ada slept seq=7 cycle=2 until=2026-03-01T12:01:00Z wake_on_message=true`},
		{delivered(state.CycleStarted(t0, 3), "m1", "m2"), `2026-03-01T12:00:00.000Z Ada cycle_started seq=7 cycle=3 delivered=m1,m2`},
	} {
		assert.Equal(t, tc.want, journalview.Text("Ada", mk(tc.e)))
	}
	unknown := journalview.Line{Raw: []byte(`{"type":"endowment_granted","seq":9,"at":"2026-03-01T12:00:00.000000Z","cycle":3,"child_id":"c-1","amount":"0.125"}`)}
	require.NoError(t, json.Unmarshal(unknown.Raw, &unknown.Head))
	assert.Equal(t, "2026-03-01T12:00:00.000Z Ada endowment_granted seq=9 cycle=3 amount=0.125 child_id=c-1", journalview.Text("Ada", unknown))
	assert.Equal(t, `{"being":"Ada","being_id":"id-1","type":"endowment_granted","seq":9,"at":"2026-03-01T12:00:00.000000Z","cycle":3,"child_id":"c-1","amount":"0.125"}`,
		string(journalview.JSON("Ada", "id-1", unknown)))
}

// undelivered is a message_delivered that took its message out of the
// outbox because its receiver had ended.
func undelivered(e state.Event) state.Event {
	e.Reason = "recipient_ended"
	return e
}

func delivered(e state.Event, ids ...string) state.Event {
	e.Delivered = ids
	return e
}

// TestTailReadsFromTheEnd: the tail of a journal longer than one read
// chunk is its last lines, the same as reading it all.
func TestTailReadsFromTheEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j := newBeing(t, dir, "Ada", "1")
	var step []state.Event
	for i := range 3000 {
		step = append(step, state.Warning(t0, 1, strings.Repeat("w", i%150)))
	}
	_, err := j.AppendStep(step)
	require.NoError(t, err)
	all, err := journalview.NewFollower(dir).Next()
	require.NoError(t, err)
	require.Len(t, all, 3000)
	for _, n := range []int{1, 7, 1000, 2999, 3000, 5000} {
		tail, err := journalview.Tail(dir, n)
		require.NoError(t, err)
		want := all[max(0, len(all)-n):]
		require.Len(t, tail, len(want), "n=%d", n)
		for i := range want {
			assert.Equal(t, string(want[i].Raw), string(tail[i].Raw))
		}
	}
}

// TestFamilySeen: a repeated walk reads state.json only for directories it
// has not seen, and finds new children.
func TestFamilySeen(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	newBeing(t, root, "Ada", "1")
	seen := map[string]journalview.Being{}
	fam, err := journalview.FamilySeen(root, seen)
	require.NoError(t, err)
	require.Len(t, fam, 1)
	// A seen being is not read again: even an unreadable state.json keeps
	// its entry.
	require.NoError(t, os.WriteFile(filepath.Join(root, state.StateFile), []byte("not json"), 0o600))
	newBeing(t, filepath.Join(root, "children", "c-bo"), "Bo", "0.5")
	fam, err = journalview.FamilySeen(root, seen)
	require.NoError(t, err)
	require.Len(t, fam, 2)
	assert.Equal(t, "Ada", fam[0].Name)
	assert.Equal(t, "Bo", fam[1].Name)
	_, err = journalview.Family(root)
	assert.Error(t, err, "a fresh walk reads the root again")
}

// TestLineOfIsTheJournalsLine: the line LineOf makes of an event read
// back from a journal is the line the journal holds, byte for byte, with
// the same head.
func TestLineOfIsTheJournalsLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j := newBeing(t, dir, "Ada", "1")
	kid := state.Child{ID: "c-bo", Name: "Bo <&>", Ticker: "BO", StateDir: state.ChildRecordDir("c-bo"), CreatedAt: t0, Status: state.StatusRunning}
	step(t, j, state.Started(t0), state.CycleStarted(t0, 1, chat.Message{Role: "user", Content: "a <b> & \"c\""}))
	step(t, j, state.Debited(t0, 1, testkit.USD("0.000123"), testkit.USD("0.0001"), 42),
		state.RevenueCredited(t0, 1, testkit.USD("0.5"), "skarbiec"),
		state.EndowmentGranted(kid, testkit.USD("0.25")), state.ChildAdded(kid))
	step(t, j, state.Warning(t0, 1, "ünïcode ✓ and <html>"), state.Stopped(t0, 1, state.StatusExhausted, "balance 0.0042 USD cannot pay the next completion's reserve 0.0061 USD"))

	lines, err := journalview.NewFollower(dir).Next()
	require.NoError(t, err)
	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	require.Len(t, events, len(lines))
	for i, e := range events {
		got, err := journalview.LineOf(e)
		require.NoError(t, err)
		assert.Equal(t, string(lines[i].Raw), string(got.Raw), "event %d (%s)", i, e.Type)
		assert.Equal(t, lines[i].Head, got.Head, "event %d (%s)", i, e.Type)
	}
}
