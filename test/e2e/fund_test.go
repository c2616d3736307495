package e2e_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// fundLine is what `singularity fund` prints.
var fundLine = regexp.MustCompile(`^funded (\S+) (\S+) USD \(key (\S+)\); remaining (\S+) USD\n$`)

func funded(events []state.Event) []state.Event {
	var out []state.Event
	for _, e := range events {
		if e.Type == state.EventFunded {
			out = append(out, e)
		}
	}
	return out
}

// TestFundStoppedFamily: a fund to a family no runtime holds is journaled
// under the root's lock, printed as one line, applied once per key (the
// same key prints the first application's line again), shown by status,
// and the ledger stays exact with funded in it.
func TestFundStoppedFamily(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100)) // 0.00021 per completion
	require.Equal(t, 0, w.run("once").code)

	r := w.run("fund", "2.5", "--key", "top-up-1", "--note", "for rent")
	require.Equal(t, 0, r.code, r.stderr)
	name := w.loadState().Identity.Name
	assert.Equal(t, "funded "+name+" 2.5 USD (key top-up-1); remaining 12.49979 USD\n", r.stdout)
	again := w.run("fund", "7", "--key", "top-up-1")
	require.Equal(t, 0, again.code, again.stderr)
	assert.Equal(t, r.stdout, again.stdout, "the same key prints the first application's line")

	random := w.run("fund", "0.000000000001")
	require.Equal(t, 0, random.code, random.stderr)
	m := fundLine.FindStringSubmatch(random.stdout)
	require.NotNil(t, m, random.stdout)
	assert.Equal(t, "0.000000000001", m[2])
	assert.Len(t, m[3], 24, "a random key")
	assert.Equal(t, "12.499790000001", m[4])

	events := w.journal()
	f := funded(events)
	require.Len(t, f, 2)
	assert.Equal(t, "2.5", f[0].Amount.String())
	assert.Equal(t, "top-up-1", f[0].Key)
	assert.Equal(t, "for rent", f[0].Note)
	st := w.loadState()
	assert.Equal(t, "2.500000000001", st.Budget.Funded.String())
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))

	status := w.run("status", "--format", "json")
	require.Equal(t, 0, status.code, status.stderr)
	var doc struct {
		Beings []struct {
			Funded string `json:"funded"`
		} `json:"beings"`
		Totals struct {
			Funded string `json:"funded"`
		} `json:"totals"`
		Ledger string `json:"family_ledger"`
	}
	require.NoError(t, json.Unmarshal([]byte(status.stdout), &doc), status.stdout)
	assert.Equal(t, "2.500000000001", doc.Beings[0].Funded)
	assert.Equal(t, "2.500000000001", doc.Totals.Funded)
	assert.Equal(t, "exact", doc.Ledger)
	assert.Contains(t, w.run("journal").stdout, `funded seq=6 cycle=1 amount=2.5 key=top-up-1 note="for rent"`)

	// The state directory from a configuration file, nothing in the
	// environment.
	cfg := filepath.Join(w.dir, "fund.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("state-dir = \""+w.stateDir+"\"\n"), 0o600))
	cmd := exec.Command(testkit.Singularity(t), "fund", "--config", cfg, "1", "--key", "by-config")
	cmd.Env = testkit.Environ(map[string]string{"PATH": os.Getenv("PATH"), "HOME": w.dir})
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "funded "+name+" 1 USD (key by-config); remaining 13.499790000001 USD\n", string(out))
}

// TestFundRefusals: every refused fund and say exits 2 with one sentence
// and leaves the state directory byte for byte as it was.
func TestFundRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100))
	require.Equal(t, 0, w.run("once").code)
	before := testkit.Snapshot(t, w.stateDir)
	long := strings.Repeat("k", control.MaxKeyBytes+1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fund", "0"}, "is not above 0 USD"},
		{[]string{"fund", "--", "-1"}, "is not a decimal"},
		{[]string{"fund", "abc"}, "is not a decimal"},
		{[]string{"fund", "1e3"}, "is not a decimal"},
		{[]string{"fund", "0.0000000000001"}, "has 13 decimal places; at most 12"},
		{[]string{"fund", "1000000.01"}, "is above the most one fund adds, 1000000 USD"},
		{[]string{"fund", "1", "--being", "nobody"}, `no being of the family in ` + w.stateDir + ` is named or has the id "nobody"`},
		{[]string{"fund", "1", "--key", long}, "the key is 129 bytes long; at most 128"},
		{[]string{"say", ""}, "the message is empty"},
		{[]string{"say", strings.Repeat("x", control.MaxTextBytes+1)}, "the message is 8193 bytes long"},
		{[]string{"say", "hi", "--being", "nobody"}, `"nobody"`},
		{[]string{"run", "--resume", "--starting-balance-usd", "5"}, "add money with `singularity fund AMOUNT`"},
		{[]string{"once", "--resume", "--starting-balance-usd", "5"}, "add money with `singularity fund AMOUNT`"},
	} {
		r := w.run(tc.args...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.errorLine(), "singularity: configuration: ", tc.args)
		assert.Contains(t, r.errorLine(), tc.want, tc.args)
		assert.Empty(t, r.stdout, tc.args)
		assert.Equal(t, before, testkit.Snapshot(t, w.stateDir), "%v: nothing was touched", tc.args)
	}
}

// TestFundFailedBeingRefused: a failed being is not revived by a fund,
// and its directory is left as it was.
func TestFundFailedBeingRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100))
	require.Equal(t, 0, w.run("once").code)
	require.NoError(t, appendEvent(w.stateDir, state.Stopped(state.Now(), 1, state.StatusFailed, "brama: 401")))
	before := testkit.Snapshot(t, w.stateDir)
	r := w.run("fund", "1")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.errorLine(), "has failed, and a failed being is not revived by a fund")
	assert.Equal(t, before, testkit.Snapshot(t, w.stateDir))
}

// appendEvent journals e after the last event of dir's journal, as a
// runtime that died before its checkpoint would have left it.
func appendEvent(dir string, e state.Event) error {
	events, err := state.ReadAll(dir)
	if err != nil {
		return err
	}
	e.Seq = events[len(events)-1].Seq + 1
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(testkit.JournalPath(dir), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// TestFundAndSayRunningBeing: with run holding the family, fund and say
// go through its control socket (mode 0600): the fund is journaled by
// the being and answered once durable; the operator's message is in the
// framing of exactly one request, once.
func TestFundAndSayRunningBeing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100))
	p := w.start("run")
	w.waitJournal(waitLimit, "two cycles", cyclesStarted(2))
	info, err := os.Stat(w.awaitSocket())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.Equal(t, os.ModeSocket, info.Mode().Type())

	r := w.run("fund", "3", "--key", "live-1")
	require.Equal(t, 0, r.code, r.stderr)
	m := fundLine.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	assert.Equal(t, "3", m[2])
	// Answered only once durable: the journal has it already.
	require.Len(t, funded(w.journal()), 1)
	again := w.run("fund", "3", "--key", "live-1")
	assert.Equal(t, r.stdout, again.stdout)

	const text = "the operator says: sell the red widgets"
	s := w.run("say", "--key", "hello-1", text)
	require.Equal(t, 0, s.code, s.stderr)
	assert.Contains(t, s.stdout, "(key hello-1)")
	events := w.journal()
	n := testkit.Count(events, state.EventCycleStarted)
	w.waitJournal(waitLimit, "two more cycles", cyclesStarted(n+2))
	p.signal(syscall.SIGTERM)
	require.Equal(t, 0, p.wait(waitLimit).code)

	framings := 0
	for _, req := range w.brama.Completions() {
		if strings.HasSuffix(lastMessage(req).Content, "\n\nMessage from the operator: "+text) {
			framings++
		}
	}
	assert.Equal(t, 1, framings, "one framing carries the message")
	events = w.journal()
	require.Len(t, funded(events), 1)
	assert.Equal(t, 1, testkit.Count(events, state.EventMessageReceived))
	st := w.loadState()
	assert.Empty(t, st.Inbox)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	_, err = os.Stat(filepath.Join(w.stateDir, control.SocketName))
	assert.ErrorIs(t, err, os.ErrNotExist, "run removes its socket when it ends")
}

// TestFundExhaustedRootLivesAgain: an exhausted root that is funded is
// stopped again, not exhausted, and `run --resume` lives on from it:
// it cycles again.
func TestFundExhaustedRootLivesAgain(t *testing.T) {
	t.Parallel()
	w := overdraftWorld(t, false, nil)
	require.Equal(t, 0, w.start("run").wait(waitLimit).code)
	require.Equal(t, state.StatusExhausted, w.loadState().Status)
	cycles := testkit.Count(w.journal(), state.EventCycleStarted)

	r := w.run("fund", "1", "--key", "revive")
	require.Equal(t, 0, r.code, r.stderr)
	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	assert.Empty(t, st.StatusReason)

	p := w.start("run", "--resume")
	w.waitJournal(waitLimit, "a cycle after the fund", cyclesStarted(cycles+2))
	p.signal(syscall.SIGTERM)
	require.Equal(t, 0, p.wait(waitLimit).code)
	require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, w.journal()))
}

// TestFundThroughStaleSocket: a runtime SIGKILLed leaves its control
// socket behind; fund and say find nobody on it, take the root's lock
// and journal the effect themselves, without hanging.
func TestFundThroughStaleSocket(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100))
	p := w.start("run")
	w.waitJournal(waitLimit, "a cycle", cyclesStarted(1))
	socket := w.awaitSocket()
	p.signal(syscall.SIGKILL)
	p.wait(waitLimit)
	_, err := os.Stat(socket)
	require.NoError(t, err, "the killed runtime left its socket")

	start := time.Now()
	r := w.run("fund", "1", "--key", "after-kill", "--timeout", "20s")
	require.Equal(t, 0, r.code, r.stderr)
	s := w.run("say", "--timeout", "20s", "hello after the kill")
	require.Equal(t, 0, s.code, s.stderr)
	assert.Less(t, time.Since(start), 15*time.Second)
	events := w.journal()
	require.Len(t, funded(events), 1)
	assert.Equal(t, 1, testkit.Count(events, state.EventMessageReceived))
}

// lastMessage is the newest message of a recorded completion request.
func lastMessage(r bramatest.Request) chat.Message {
	msgs := r.Completion.Messages
	return msgs[len(msgs)-1]
}

// TestFundExhaustedChildLivesAgain: in a running family, a child endowed
// too little for one completion ends exhausted in its first cycle; a
// fund through the running family's socket wakes it at once: it boots
// again and asks the gateway for a completion, and the family's ledger
// stays exact.
func TestFundExhaustedChildLivesAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	// The smallest completion's reserve is about 0.000266 USD: 256
	// completion tokens at 1 USD per million and the prompt.
	w.env["BRAMA_INPUT_PRICE_USD_PER_MILLION"] = "0.01"
	w.env["BRAMA_OUTPUT_PRICE_USD_PER_MILLION"] = "1"
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "3600"
	var spawned atomic.Bool
	boAsked := make(chan struct{}, 100)
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		if strings.HasPrefix(r.Completion.Messages[0].Content, "You are Bo") {
			boAsked <- struct{}{}
			return bramatest.TextReply("alive", bramatest.Usage(100, 10))
		}
		if spawned.CompareAndSwap(false, true) {
			return bramatest.ToolCallsReply(bramatest.Usage(100, 10), bramatest.Call("s", "singularity_spawn_child",
				`{"name":"Bo","ticker":"BO","specialty":"thrift","endowment_usd":"0.0001"}`))
		}
		return bramatest.TextReply("done", bramatest.Usage(100, 10))
	})
	p := w.start("run")
	children := filepath.Join(w.stateDir, "children")
	var boDir string
	deadline := time.Now().Add(waitLimit)
	for {
		if dirs, _ := filepath.Glob(filepath.Join(children, "*", "activity.jsonl")); len(dirs) == 1 {
			if events, err := readJournalLoose(dirs[0]); err == nil && len(events) > 0 && last(events).Type == state.EventStopped {
				require.Equal(t, state.StatusExhausted, last(events).Status)
				boDir = filepath.Dir(dirs[0])
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "Bo never ended exhausted:\n%s", p.stderr.String())
		time.Sleep(20 * time.Millisecond) // polling another process's files
	}
	require.Empty(t, boAsked, "Bo could not pay for a completion")

	r := w.run("fund", "--being", "Bo", "1", "--key", "wake-bo")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "funded Bo 1 USD (key wake-bo); remaining 1.0001 USD\n", r.stdout)
	select {
	case <-boAsked:
	case <-time.After(waitLimit):
		t.Fatalf("Bo never cycled again:\n%s", p.stderr.String())
	}
	p.signal(syscall.SIGTERM)
	require.Equal(t, 0, p.wait(waitLimit).code)

	events := testkit.Journal(t, boDir)
	require.Len(t, funded(events), 1)
	assert.Equal(t, 2, testkit.Count(events, state.EventStarted), "Bo booted again")
	status := w.run("status", "--format", "json")
	require.Equal(t, 0, status.code, status.stderr)
	assert.Contains(t, status.stdout, `"family_ledger": "exact"`)
	assert.Contains(t, status.stdout, `"funded": "1"`)
}

// TestSayWithNoRuntimeScreensSecrets: a message that `say` journals
// itself, with no runtime holding the family, is screened against the
// secrets of the configuration in scope before it is journaled, as a
// running runtime screens it: the journal holds `[redacted]`, never the
// secret, in any file of the state directory.
func TestSayWithNoRuntimeScreensSecrets(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetHandler(textReplies(1000, 100))
	require.Equal(t, 0, w.run("once").code)

	r := w.run("say", "--key", "leak", "the gateway secret is "+secretValue+", keep it")
	require.Equal(t, 0, r.code, r.stderr)
	var text string
	for _, e := range w.journal() {
		if e.Type == state.EventMessageReceived && e.ID == "leak" {
			text = e.Text
		}
	}
	assert.Equal(t, "the gateway secret is [redacted], keep it", text)
	require.NoError(t, filepath.WalkDir(w.stateDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&os.ModeSocket != 0 {
			return err
		}
		raw, err := os.ReadFile(path)
		assert.NotContains(t, string(raw), secretValue, path)
		return err
	}))
}

// awaitSocket waits, within waitLimit, until the running runtime answers
// on its control socket, which it opens once its root has booted (the
// first cycle may start before), and returns the socket's path.
func (w *world) awaitSocket() string {
	w.t.Helper()
	socket := filepath.Join(w.stateDir, control.SocketName)
	require.Eventually(w.t, func() bool {
		_, err := control.Ask(socket, control.Request{}, time.Second)
		return !errors.Is(err, control.ErrNoRuntime)
	}, waitLimit, 10*time.Millisecond, "the runtime answers on its control socket")
	return socket
}
