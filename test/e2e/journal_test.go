package e2e_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
)

// lineRE is one line of `singularity journal --format text`:
// <time> <being> <type> <fields>.
var lineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \S+ [a-z_]+ seq=\d+( \S.*)?$`)

// maxCycleOnDisk is the highest cycle_started in the being's journal.
func (w *world) maxCycleOnDisk() uint64 {
	w.t.Helper()
	events, err := readJournalLoose(w.stateDir + "/activity.jsonl")
	require.NoError(w.t, err)
	var c uint64
	for _, e := range events {
		if e.Type == state.EventCycleStarted && e.Cycle > c {
			c = e.Cycle
		}
	}
	return c
}

// TestJournalFollowsARunningFamily runs a being, follows its journal with
// `singularity journal --follow`, sees each new cycle while the being is
// still in it or the next one (within one cycle), and stops the follower
// with SIGINT: exit 0, nothing on stderr. The whole journal then prints
// the same events in order, as text and as JSON with exact decimals.
func TestJournalFollowsARunningFamily(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "1"
	w.brama.SetHandler(textReplies(10, 5))
	run := w.start("run")
	run.stderr.waitFor(t, `msg=completion`, 30*time.Second)

	follow := w.start("journal", "--follow")
	seen := uint64(0)
	for want := uint64(2); want <= 3; want++ {
		text := "cycle_started seq="
		follow.stdout.waitFor(t, "cycle="+strconv.FormatUint(want, 10)+" ", 20*time.Second)
		// When cycle want shows, the being has not gone past the next
		// cycle: the follower is at most one cycle behind.
		assert.LessOrEqual(t, w.maxCycleOnDisk(), want+1)
		assert.Contains(t, follow.stdout.String(), text)
		seen = want
	}
	follow.signal(syscall.SIGINT)
	r := follow.wait(10 * time.Second)
	assert.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	assert.Empty(t, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, line := range lines {
		assert.Regexp(t, lineRE, line)
	}
	assert.Contains(t, lines[0], " Ada started seq=1")

	run.signal(syscall.SIGINT)
	require.Equal(t, 0, run.wait(30*time.Second).code)

	// The stopped family's whole journal, as text and as JSON.
	events := w.journal()
	text := w.run("journal")
	require.Equal(t, 0, text.code, text.stderr)
	textLines := strings.Split(strings.TrimSpace(text.stdout), "\n")
	require.Len(t, textLines, len(events))
	asJSON := w.run("journal", "--format", "json", "--being", "Ada")
	require.Equal(t, 0, asJSON.code, asJSON.stderr)
	jsonLines := strings.Split(strings.TrimSpace(asJSON.stdout), "\n")
	require.Len(t, jsonLines, len(events))
	for i, line := range jsonLines {
		var e struct {
			Being  string `json:"being"`
			Type   string `json:"type"`
			Seq    uint64 `json:"seq"`
			Amount string `json:"amount"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		assert.Equal(t, "Ada", e.Being)
		assert.Equal(t, events[i].Type, e.Type)
		assert.Equal(t, events[i].Seq, e.Seq)
		if e.Type == state.EventCostDebited {
			assert.Equal(t, events[i].Amount.String(), e.Amount, "exact decimals")
		}
	}
	assert.GreaterOrEqual(t, seen, uint64(3))

	// An unknown being is a usage error.
	bad := w.run("journal", "--being", "Nobody")
	assert.Equal(t, 2, bad.code)
	assert.Equal(t, `singularity: configuration: no being "Nobody" in the family at `+w.stateDir, bad.errorLine())
}
