package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// Every end of a life is explained (docs/state.md#steps,
// docs/cycle.md#the-end-of-run): the stopped event carries the reason,
// status and journal show it, and run ends with a summary on stderr.

// statusReason is the root's status and reason as `status --format
// json` prints them.
func statusReason(t *testing.T, w *world) (string, string) {
	t.Helper()
	status, reason, _ := endOf(t, w)
	return status, reason
}

// exhaustedReason is the balance and the reserve an exhausted being's
// reason names, as their exact text.
func exhaustedReason(t *testing.T, reason string) (balance, reserve string) {
	t.Helper()
	m := regexp.MustCompile(`^balance (\S+) USD cannot pay the next completion's reserve (\S+) USD$`).FindStringSubmatch(reason)
	require.NotNil(t, m, reason)
	return m[1], m[2]
}

// summaryLine is the line run's summary gives the root.
func summaryLine(st *state.Being, status string) string {
	return fmt.Sprintf("run ended:\n  %s: %s, %d cycles, spent %s, earned %s, remaining %s USD\n", st.Identity.Name, status, st.Cycle,
		st.Budget.APISpent.Add(st.Budget.InstanceSpent), st.Budget.Earned, st.Budget.Remaining)
}

// TestExhaustedEndExplained: a being that cannot pay its next
// completion's reserve ends exhausted, and the reason says the exact
// balance and the exact reserve it could not pay, in the journal, the
// state, status's JSON and table, journal's text and run's summary.
func TestExhaustedEndExplained(t *testing.T) {
	t.Parallel()
	w := overdraftWorld(t, false, nil)
	r := w.start("run").wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	st := w.loadState()
	require.Equal(t, state.StatusExhausted, st.Status)
	end := last(w.journal())
	require.Equal(t, state.EventStopped, end.Type)
	balance, reserveText := exhaustedReason(t, end.Reason)
	assert.Equal(t, st.Budget.Remaining.String(), balance, "the exact balance")
	reserve := testkit.USD(reserveText)
	assert.Positive(t, reserve.Cmp(st.Budget.Remaining), "the reserve is more than the balance")
	// At least the smallest completion's output: 256 tokens at 1 USD per million.
	assert.GreaterOrEqual(t, reserve.Cmp(testkit.USD("0.000256")), 0)
	assert.Equal(t, end.Reason, st.StatusReason)

	status, reason := statusReason(t, w)
	assert.Equal(t, state.StatusExhausted, status)
	assert.Equal(t, end.Reason, reason)
	table := w.run("status")
	assert.Contains(t, table.stdout, "why lives ended:\n  "+st.Identity.Name+" exhausted: "+end.Reason+"\n")
	assert.Contains(t, w.run("journal").stdout, `status=exhausted reason="`+end.Reason+`"`)
	assert.Contains(t, r.stderr, summaryLine(st, "exhausted ("+end.Reason+")"))
}

// TestUnauthorizedEndExplained: a provider that refuses the key with 401
// (its message echoing the key) fails the being: run exits 3, and the
// reason is the error's sentence with the key redacted, in the journal,
// status and run's summary; the key is in none of them.
func TestUnauthorizedEndExplained(t *testing.T) {
	t.Parallel()
	w := newGatewayWorld(t, "bearer", "gpt-small")
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		return bramatest.ErrorReply(http.StatusUnauthorized, "invalid api key "+apiKeyValue)
	})
	r := w.start("run").wait(waitLimit)
	require.Equal(t, 3, r.code, r.stderr)
	st := w.loadState()
	require.Equal(t, state.StatusFailed, st.Status)
	end := last(w.journal())
	require.Equal(t, state.EventStopped, end.Type)
	assert.Equal(t, "brama: HTTP 401: invalid api key [redacted]", end.Reason)
	status, reason := statusReason(t, w)
	assert.Equal(t, state.StatusFailed, status)
	assert.Equal(t, end.Reason, reason)
	assert.Contains(t, r.stderr, summaryLine(st, "failed ("+end.Reason+")"))
	assert.NotContains(t, r.stderr+w.run("journal").stdout+w.run("status").stdout, apiKeyValue)
}

// TestStorageFailureEndExplained: a run whose boot is held on a full
// disk and given up at SIGTERM fails (exit 4) without journaling its
// end; its summary says why, from the end the root reported, and so do
// status (JSON and table) and journal, from the being's last words
// (docs/state.md#last-words), marked as not journaled, while the disk is
// still full. Once space returns, the next boot journals the end as its
// stopped event, and the marks go.
func TestStorageFailureEndExplained(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounts a size-limited tmpfs and must run as root")
	}
	t.Parallel()
	w := newWorld(t, `{}`)
	mnt := mountTmpfs(t, filepath.Join(w.dir, "disk"))
	w.stateDir = filepath.Join(mnt, testkit.StateDir)
	w.env["SINGULARITY_STATE_DIR"] = w.stateDir
	w.brama.Enqueue(bramatest.TextReply("A first life.", bramatest.Usage(100, 10)))
	require.Equal(t, 0, w.run("once").code)
	name := w.loadState().Identity.Name
	heal := fillDisk(t, mnt)
	p := w.start("run", "--resume")
	waitStderrCount(t, p, 1, diskWait)
	p.signal(syscall.SIGTERM)
	r := p.wait(2*time.Second + diskWait)
	require.Equal(t, 4, r.code, r.stderr)
	why := regexp.MustCompile(`(?m)^  \S+: failed \((state: boot given up at shutdown: storage unavailable: .*` + syscall.ENOSPC.Error() + `)\), 1 cycles, spent `).FindStringSubmatch(r.stderr)
	require.NotNil(t, why, r.stderr)
	reason := why[1]

	// The disk is still full: the end is read from the last words.
	held := w.journal()
	assert.NotEqual(t, state.EventStopped, last(held).Type, "the end was not journaled")
	status, said, words := endOf(t, w)
	assert.Equal(t, state.StatusFailed, status)
	assert.Equal(t, reason, said)
	assert.True(t, words, "status says the end is the being's last words")
	assert.Contains(t, w.run("status").stdout, "why lives ended:\n  "+name+" failed: "+reason+" (not journaled: storage failed)\n")
	text := strings.TrimSpace(w.run("journal").stdout)
	assert.Regexp(t, ` `+regexp.QuoteMeta(name)+` stopped cycle=1 status=failed reason=`+regexp.QuoteMeta(strconv.Quote(reason))+` \(not journaled: storage failed\)$`, text)
	lines := strings.Split(strings.TrimSpace(w.run("journal", "--format", "json").stdout), "\n")
	var end map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &end))
	assert.Equal(t, map[string]any{"being": name, "being_id": end["being_id"], "type": "stopped", "at": end["at"], "cycle": 1.0,
		"status": "failed", "reason": reason, "journaled": false}, end)

	// Space returns: the next boot journals the end.
	heal()
	w.brama.Enqueue(bramatest.TextReply("A third life.", bramatest.Usage(100, 10)))
	require.Equal(t, 0, w.run("once", "--resume").code)
	events := w.journal()
	i := slices.IndexFunc(events, func(e state.Event) bool { return e.Type == state.EventStopped && e.Status == state.StatusFailed })
	require.Positive(t, i, "the failed end is journaled")
	require.Greater(t, len(events), i+1)
	assert.Equal(t, reason, events[i].Reason)
	assert.Equal(t, last(held).Seq+1, events[i].Seq, "right after what the failed life journaled")
	assert.Equal(t, state.EventStarted, events[i+1].Type, "with the next boot")
	status, said, words = endOf(t, w)
	assert.Equal(t, state.StatusStopped, status)
	assert.Empty(t, said)
	assert.False(t, words)
	assert.NotContains(t, w.run("journal").stdout, "not journaled")
}

// endOf is the root's status and reason as `status --format json`
// prints them, and whether they are its last words.
func endOf(t *testing.T, w *world) (status, reason string, lastWords bool) {
	t.Helper()
	r := w.run("status", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		Beings []struct {
			Status    string `json:"status"`
			Reason    string `json:"reason"`
			LastWords bool   `json:"last_words"`
		} `json:"beings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.NotEmpty(t, out.Beings)
	return out.Beings[0].Status, out.Beings[0].Reason, out.Beings[0].LastWords
}
