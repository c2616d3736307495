package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// traced is what strace saw the real binary make durable in the being's
// state directory.
type traced struct {
	journal, archive, checkpoint, dir int      // fsyncs of each file
	parent                            int      // fsyncs of the directory the state directory was made in
	lastWords                         int      // fsyncs of the last words' file (made once a life)
	published                         int      // renames (or links) onto state.json
	elsewhere                         []string // fsyncs of other files, by path
	disorder                          []string // state.json published out of order
}

// The lines of `strace -f -y -e trace=fsync,fdatasync,rename,renameat,renameat2,link,linkat`
// this test reads: an fsync with the fd's path (-y), or a rename.
var (
	syncLine   = regexp.MustCompile(`^\d+ +f(?:data)?sync\(\d+<([^>]*)>\) += 0$`)
	renameLine = regexp.MustCompile(`^\d+ +(?:rename(?:at2?)?|link(?:at)?)\([^"]*"([^"]*)"[^"]*"([^"]*)"(?:, \w+)?\) += 0$`)
)

// traceOnce runs `once` under strace and sorts every successful fsync of
// the state directory by the file it made durable.
func traceOnce(t *testing.T, strace string, w *world) traced {
	t.Helper()
	out := filepath.Join(w.dir, "strace.txt")
	args := append([]string{"-f", "-qq", "-y", "-e", "signal=none", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,link,linkat", "-o", out,
		testkit.Singularity(t)}, "once")
	cmd := exec.Command(strace, args...)
	cmd.Env = testkit.Environ(w.env)
	done := make(chan error, 1)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "once under strace:\n%s", stderr.String())
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("once under strace did not end within 90 s:\n%s", stderr.String())
	}

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	var seen traced
	dir := filepath.Clean(w.stateDir)
	synced := map[string]bool{} // temporary files fsynced, not yet published
	unsyncedDir := ""           // a publication its directory's fsync has not followed yet
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := renameLine.FindStringSubmatch(line); m != nil {
			if filepath.Clean(m[2]) != filepath.Join(dir, state.StateFile) {
				continue
			}
			seen.published++
			if !synced[filepath.Clean(m[1])] {
				seen.disorder = append(seen.disorder, "published before its fsync: "+m[1])
			}
			if unsyncedDir != "" {
				seen.disorder = append(seen.disorder, "published before the directory's fsync after "+unsyncedDir)
			}
			unsyncedDir = m[1]
			continue
		}
		m := syncLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch path := filepath.Clean(m[1]); {
		case path == dir:
			seen.dir++
			unsyncedDir = ""
		case path == filepath.Dir(dir):
			seen.parent++
		case path == filepath.Join(dir, state.JournalFile):
			seen.journal++
			if unsyncedDir != "" {
				seen.disorder = append(seen.disorder, "a journal step before the directory's fsync after "+unsyncedDir)
			}
		case path == filepath.Join(dir, state.ArchiveFile):
			seen.archive++
		case path == filepath.Join(dir, state.LastWordsFile):
			seen.lastWords++
		case filepath.Dir(path) == dir && strings.HasPrefix(filepath.Base(path), "."+state.StateFile+"."):
			seen.checkpoint++
			synced[path] = true
		default:
			seen.elsewhere = append(seen.elsewhere, path)
		}
	}
	require.NoError(t, sc.Err())
	if unsyncedDir != "" {
		seen.disorder = append(seen.disorder, "no fsync of the directory after "+unsyncedDir)
	}
	return seen
}

// TestFsyncsPerRound counts, under strace, the fsyncs the real binary
// makes in one cycle of `once` whose rounds each make two tool calls (a
// memory and a finance sale): a round is one journal fsync for the
// completion's step and one per tool's step, 1 + 2. It runs the cycle
// with one such round and with four, so the three rounds more must cost
// exactly nine journal fsyncs, the fresh state directory is made durable
// in its parent (one fsync of that directory), and every checkpoint
// (state.json) is one
// fsync of its temporary file, then its rename (a link for the fresh
// state), then one fsync of the directory before the next journal step. Removing any fsync of the journal's append or of the
// checkpoint fails this test. Skipped where strace is not installed
// (.ci/run installs it).
func TestFsyncsPerRound(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (.ci/run installs it)")
	}
	life := func(rounds int) traced {
		w := newWorld(t, `{}`)
		for r := 1; r <= rounds; r++ {
			w.brama.Enqueue(bramatest.ToolCallsReply(bramatest.Usage(1000, 200),
				bramatest.Call(fmt.Sprintf("call-mem-%d", r), "singularity_memory_remember", fmt.Sprintf(`{"kind":"note","text":"round %d"}`, r)),
				bramatest.Call(fmt.Sprintf("call-sell-%d", r), "finance__finance_sell_report", fmt.Sprintf(`{"item":"survey %d","units":1}`, r)),
			))
		}
		w.brama.Enqueue(bramatest.TextReply("Done for now.", bramatest.Usage(1500, 50)))
		seen := traceOnce(t, strace, w)
		events := w.journal()
		require.Equal(t, 2*rounds, testkit.Count(events, state.EventToolFinished), "every call finished")
		require.NoError(t, testkit.CheckInvariant(w.loadState().Budget, events))
		return seen
	}
	one, four := life(1), life(4)
	t.Logf("one round:   %+v", one)
	t.Logf("four rounds: %+v", four)

	const tools = 2
	assert.Equal(t, 3*(1+tools), four.journal-one.journal,
		"three more rounds of two tool calls: 1 + tools journal fsyncs each")
	for _, seen := range []traced{one, four} {
		assert.Positive(t, seen.published, "the boot and the stop each write state.json")
		assert.Equal(t, seen.published, seen.checkpoint, "each state.json is fsynced before its rename")
		assert.GreaterOrEqual(t, seen.dir, seen.published, "each rename onto state.json is followed by an fsync of the directory")
		assert.Equal(t, 1, seen.parent, "the fresh state directory's entry is made durable in its parent")
		assert.Equal(t, 1, seen.lastWords, "the last words' file is made once a life (docs/state.md#last-words)")
		assert.Empty(t, seen.elsewhere, "no other file of the state directory is made durable")
		assert.Empty(t, seen.disorder, "each state.json: fsync of its temporary file, rename, fsync of the directory, before anything else")
	}
	perRound := float64(four.journal+four.checkpoint+four.dir+four.archive-one.journal-one.checkpoint-one.dir-one.archive) / 3
	t.Logf("fsyncs per round with %d tool calls: %.2f (%d journal, the rest checkpoints amortized)", tools, perRound, 1+tools)
}
