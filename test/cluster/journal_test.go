package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// TestJournalFollowsAFamilyAcrossMachines: `singularity journal --follow`
// on a family across processes, started before any member, prints each
// being's committed events as they are committed, the children spawned
// after it started included, and in the end exactly what a reading of
// the whole journal prints for each being; `--tail` then prints the
// newest of them, as the whole journal orders them.
func TestJournalFollowsAFamilyAcrossMachines(t *testing.T) {
	followAcrossMachines(t, false)
}

// TestJournalFollowsASpreadFamily is the same with the beings spread
// over two members, parents and children on different ones.
func TestJournalFollowsASpreadFamily(t *testing.T) {
	followAcrossMachines(t, true)
}

func followAcrossMachines(t *testing.T, spread bool) {
	w := newWorld(t)
	if spread {
		w.spreadOut()
	}
	w.seed(len(familyNames) + 1) // the root and one child, before the demo's
	follow := exec.Command(w.bin, "journal", "--follow", "--format", "json")
	follow.Env = w.readerEnv()
	followed := newLineWatch()
	follow.Stdout = followed
	var stderr strings.Builder
	follow.Stderr = &stderr
	require.NoError(t, follow.Start())
	exited := make(chan error, 1)
	go func() { exited <- follow.Wait() }()
	t.Cleanup(func() { _ = follow.Process.Kill() })

	if spread {
		members := []*proc{w.start("m1"), w.start("m2")}
		for _, m := range members {
			m.await(t, places, waitLimit)
		}
		require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "every being cycled, the demo's children spawned")
		stopInTurn(t, members...)
	} else {
		holder := w.start("m1")
		holder.await(t, "this member holds the family", waitLimit)
		require.True(t, w.seen.until(waitLimit, w.allCycledSince(nil)), "every being cycled, the demo's children spawned")
		stopInTurn(t, holder)
	}
	w.requireJournal(t, w.check(t))

	whole := strings.Split(strings.TrimSpace(string(w.runReader(t, "journal", "--format", "json"))), "\n")
	wholeOf := linesByBeing(t, whole)
	require.Len(t, wholeOf, len(w.names), "the whole journal has every being")
	for _, lines := range wholeOf {
		require.True(t, followed.AwaitCount(lines[len(lines)-1], 1, waitLimit),
			"the follower printed the newest event of each being; stderr:\n%s", stderr.String())
	}
	require.NoError(t, follow.Process.Signal(os.Interrupt))
	select {
	case err := <-exited:
		require.NoError(t, err, "stderr:\n%s", stderr.String())
	case <-time.After(waitLimit):
		t.Fatalf("journal --follow did not end within %s of SIGINT; stderr:\n%s", waitLimit, stderr.String())
	}
	followed.Close()
	followedOf := linesByBeing(t, followed.Lines())
	for id, lines := range wholeOf {
		require.Equal(t, lines, followedOf[id], "the follower printed being %s's events, each once", id)
	}
	require.Len(t, followedOf, len(wholeOf))

	tail := strings.Split(strings.TrimSpace(string(w.runReader(t, "journal", "--format", "json", "--tail", "5"))), "\n")
	require.Equal(t, whole[len(whole)-5:], tail, "--tail 5 is the whole journal's newest 5")
	bo := wholeOf[idNamed(t, whole, "Bo")]
	tail = strings.Split(strings.TrimSpace(string(w.runReader(t, "journal", "--format", "json", "--being", "Bo", "--tail", "2"))), "\n")
	require.Equal(t, bo[len(bo)-2:], tail, "--being Bo --tail 2 is Bo's newest 2")
}

// linesByBeing splits `journal --format json` lines by their being_id,
// each being's in the order printed.
func linesByBeing(t testing.TB, lines []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range lines {
		var head struct {
			ID string `json:"being_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), "journal line %q", line)
		out[head.ID] = append(out[head.ID], line)
	}
	return out
}

// idNamed is the being_id of the being named name in `journal --format
// json` lines.
func idNamed(t testing.TB, lines []string, name string) string {
	t.Helper()
	for _, line := range lines {
		var head struct {
			Name string `json:"being"`
			ID   string `json:"being_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), "journal line %q", line)
		if head.Name == name {
			return head.ID
		}
	}
	t.Fatalf("no being %s in the journal", name)
	return ""
}

// readerEnv is the environment of a reader of the family (journal,
// status) run by the test.
func (w *world) readerEnv() []string {
	return testkit.Environ(map[string]string{
		"PATH":                       os.Getenv("PATH"),
		"SINGULARITY_STATE_DIR":      w.stateDir,
		"SINGULARITY_CLUSTER_ETCD":   w.env["SINGULARITY_CLUSTER_ETCD"],
		"SINGULARITY_CLUSTER_FAMILY": familyName,
	})
}
