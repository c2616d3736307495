package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// storageLine is what the being logs on stderr for every failed attempt
// of a held durable write, and how its journaled warning begins
// (docs/cycle.md#storage-faults).
const storageLine = "storage unavailable: "

// Bounds of the full-disk test's waits.
const (
	diskPoll    = 20 * time.Millisecond
	diskWait    = 30 * time.Second // any one wait for the being
	diskWindow  = 10 * time.Second // how long a held write is watched at most
	diskRetries = 3                // retries watched after the first failure (1 s, 2 s, 4 s)
	diskStderr  = 64 << 10
)

// diskFault is a way of taking a real file system away from a running
// being and giving it back.
type diskFault struct {
	name string
	// errno is the error text the held write's failure carries.
	errno syscall.Errno
	// inject breaks the file system mounted at mnt (skipping t when this
	// machine cannot) and returns what repairs it.
	inject func(t *testing.T, mnt string) (heal func())
}

// TestFullDiskIsSurvived runs the real binary with its state directory
// on a size-limited tmpfs, then fills that file system (and, as a
// sub-case, remounts it read-only) while the being lives: the being must
// hold its step and retry with backoff instead of spinning, call no
// model while it waits, carry on once space returns, journal one
// warning for the failed attempts, and leave a state directory whose
// journal is whole, numbered without gaps and exact in money, which a
// resume continues. It needs root (it mounts); elsewhere it is skipped.
// Every fault is one sub-case; one the machine cannot make is skipped.
func TestFullDiskIsSurvived(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: the full-disk test mounts a size-limited tmpfs and must run as root (e.g. sudo go test -run TestFullDisk ./test/e2e/)")
	}
	faults := []diskFault{
		{name: "ENOSPC", errno: syscall.ENOSPC, inject: fillDisk},
		{name: "EROFS", errno: syscall.EROFS, inject: remountRO},
		// Linux refuses the remount above while the being holds its
		// journal open for writing (always): a read-only bind mount over
		// the state directory still makes every write by path fail with
		// a real EROFS (the open journal keeps writing underneath).
		{name: "EROFS bind", errno: syscall.EROFS, inject: bindRO},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			testDiskFault(t, f)
		})
	}
}

func testDiskFault(t *testing.T, fault diskFault) {
	w := newWorld(t, `{}`)
	mnt := mountTmpfs(t, filepath.Join(w.dir, "disk"))
	w.stateDir = filepath.Join(mnt, testkit.StateDir)
	w.env["SINGULARITY_STATE_DIR"] = w.stateDir
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "0.1"
	w.brama.SetHandler(rememberThenReply())

	p := w.start("run")
	w.waitJournal(diskWait, "three cycles", cyclesStarted(3))

	heal := fault.inject(t, mnt)
	injected := time.Now()
	first := waitStderrCount(t, p, 1, diskWait)
	failedAt := time.Now()
	completionsAtFailure := len(w.brama.Completions())
	heldJournal, err := readJournalLoose(testkit.JournalPath(w.stateDir))
	require.NoError(t, err)
	require.Contains(t, first, fault.errno.Error(), "the held write fails with the fault's error")
	stderrAtFailure := len(p.stderr.String())

	// Watch the held write: a few retries, spaced by the backoff.
	seen := []time.Duration{0}
	for len(seen) <= diskRetries && time.Since(failedAt) < diskWindow {
		if n := strings.Count(p.stderr.String(), storageLine); n > len(seen) {
			for len(seen) < n {
				seen = append(seen, time.Since(failedAt))
			}
		}
		time.Sleep(diskPoll) // polling another process's output
	}
	elapsed := time.Since(failedAt)
	attempts := strings.Count(p.stderr.String(), storageLine)
	stderrNow := p.stderr.String()
	completionsAtEnd := len(w.brama.Completions())
	t.Logf("%s: first failure %v after the fault: %s", fault.name, failedAt.Sub(injected).Round(time.Millisecond), first)
	t.Logf("%s: %d attempts in %v (seen at %v); stderr %d bytes (%d during the window); completions %d → %d",
		fault.name, attempts, elapsed.Round(time.Millisecond),
		roundAll(seen), len(stderrNow), len(stderrNow)-stderrAtFailure, completionsAtFailure, completionsAtEnd)
	assert.LessOrEqual(t, float64(attempts), 2+elapsed.Seconds(), "the held write is retried with backoff, not spun")
	assert.GreaterOrEqual(t, attempts, 2, "the held write is retried")
	assert.Less(t, len(stderrNow), diskStderr, "stderr stays small while storage fails")
	assert.LessOrEqual(t, completionsAtEnd, completionsAtFailure+1, "no model call while the step is held (but one in flight)")
	stillHeld, err := readJournalLoose(testkit.JournalPath(w.stateDir))
	require.NoError(t, err)
	assert.Len(t, stillHeld, len(heldJournal), "nothing is journaled while the step is held")
	cyclesHeld := testkit.Count(stillHeld, state.EventCycleStarted)

	// Space returns; the being carries on.
	heal()
	healed := time.Now()
	w.waitJournal(diskWait, "a cycle after the fault", cyclesStarted(cyclesHeld+1))
	t.Logf("%s: a new cycle %v after the repair", fault.name, time.Since(healed).Round(time.Millisecond))
	p.signal(os.Interrupt)
	r := p.wait(diskWait)
	require.Equal(t, 0, r.code, r.stderr)
	attempts = strings.Count(r.stderr, storageLine)

	st := w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	events := checkJournal(t, w, st, 1)
	var warnings []state.Event
	for _, e := range events {
		if e.Type == state.EventWarning && strings.HasPrefix(e.Message, storageLine) {
			warnings = append(warnings, e)
		}
	}
	require.Len(t, warnings, 1, "one warning stands for the failed attempts")
	assert.Contains(t, warnings[0].Message, fault.errno.Error())
	assert.GreaterOrEqual(t, warnings[0].Repeats, 1)
	assert.Equal(t, attempts, warnings[0].Repeats, "repeats counts the attempts logged")
	assert.Greater(t, testkit.Count(events, state.EventCycleStarted), cyclesHeld)
	assert.Empty(t, w.brama.UnansweredToolCalls(), "every tool call in every request is answered")

	// A resume finds the being whole and lives on.
	cycles := testkit.Count(events, state.EventCycleStarted)
	p = w.start("run", "--resume")
	w.waitJournal(diskWait, "a cycle after the resume", cyclesStarted(cycles+1))
	p.signal(os.Interrupt)
	r = p.wait(diskWait)
	require.Equal(t, 0, r.code, r.stderr)
	st = w.loadState()
	assert.Equal(t, state.StatusStopped, st.Status)
	checkJournal(t, w, st, 2)
	assert.Empty(t, w.brama.UnansweredToolCalls(), "every tool call in every request is answered")
}

// checkJournal reads every journal segment and checks it against st:
// the ledger invariant is exact, the events are numbered 1, 2, 3, …, and
// the being started lives times.
func checkJournal(t *testing.T, w *world, st *state.Being, lives int) []state.Event {
	t.Helper()
	events, err := state.ReadAll(w.stateDir)
	require.NoError(t, err)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	for i, e := range events {
		require.Equal(t, uint64(i+1), e.Seq, "seq has no gaps")
	}
	assert.Equal(t, lives, testkit.Count(events, state.EventStarted))
	assert.Equal(t, state.EventStopped, last(events).Type)
	return events
}

// rememberThenReply answers forever: odd completions with a call to
// remember something small, even ones with a plain reply.
func rememberThenReply() func(*bramatest.Request) bramatest.Reply {
	var n atomic.Int64
	return func(*bramatest.Request) bramatest.Reply {
		i := n.Add(1)
		if i%2 == 1 {
			return bramatest.ToolCallsReply(bramatest.Usage(100, 10),
				bramatest.Call(fmt.Sprintf("call-%d", i), "singularity_memory_remember", fmt.Sprintf(`{"kind":"note","text":"note %d"}`, i)))
		}
		return bramatest.TextReply("noted", bramatest.Usage(120, 5))
	}
}

// waitStderrCount polls the process's stderr until storageLine appeared
// n times and returns the n-th line.
func waitStderrCount(t *testing.T, p *process, n int, limit time.Duration) string {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		text := p.stderr.String()
		if strings.Count(text, storageLine) >= n {
			var found []string
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, storageLine) {
					found = append(found, line)
				}
			}
			return found[n-1]
		}
		if time.Now().After(end) {
			t.Fatalf("stderr never showed %q %d times within %v:\n%s", storageLine, n, limit, text)
		}
		time.Sleep(diskPoll) // polling another process's output
	}
}

// mountTmpfs mounts an 8 MiB tmpfs at dir (created) and unmounts it at
// cleanup; it skips t when mounting fails.
func mountTmpfs(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	if out, err := runBounded("mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", dir); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs at %s (%v): %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := runBounded("umount", dir); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			_, _ = runBounded("umount", "-l", dir)
		}
	})
	return dir
}

// runBounded runs a command with a deadline and returns its output.
func runBounded(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// fillDisk writes a filler file beside the state directory until the
// file system is full; removing it lets space return.
func fillDisk(t *testing.T, mnt string) (heal func()) {
	t.Helper()
	filler := filepath.Join(mnt, "filler")
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		require.Less(t, i, 1024, "an 8 MiB tmpfs never filled")
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	require.True(t, errors.Is(err, syscall.ENOSPC), "filling ends with ENOSPC, not %v", err)
	return func() { require.NoError(t, os.Remove(filler)) }
}

// remountRO turns the tmpfs read-only; it skips t when the kernel
// refuses (it does while a file on it is open for writing).
func remountRO(t *testing.T, mnt string) (heal func()) {
	t.Helper()
	if out, err := runBounded("mount", "-o", "remount,ro", mnt); err != nil {
		t.Skipf("skipped: cannot remount %s read-only while the being runs (%v): %s", mnt, err, out)
	}
	return func() {
		out, err := runBounded("mount", "-o", "remount,rw", mnt)
		require.NoError(t, err, out)
	}
}

// bindRO mounts the state directory read-only over itself; it skips t
// when the kernel refuses. Cleanup unmounts it unless heal did.
func bindRO(t *testing.T, mnt string) (heal func()) {
	t.Helper()
	dir := filepath.Join(mnt, testkit.StateDir)
	if out, err := runBounded("mount", "--bind", dir, dir); err != nil {
		t.Skipf("skipped: cannot bind-mount %s (%v): %s", dir, err, out)
	}
	bound := true
	unmount := func() (string, error) {
		out, err := runBounded("umount", dir)
		if err == nil {
			bound = false
		}
		return out, err
	}
	t.Cleanup(func() {
		if !bound {
			return
		}
		if out, err := unmount(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			_, _ = runBounded("umount", "-l", dir)
		}
	})
	if out, err := runBounded("mount", "-o", "remount,bind,ro", dir); err != nil {
		t.Skipf("skipped: cannot make the bind mount %s read-only (%v): %s", dir, err, out)
	}
	return func() {
		out, err := unmount()
		require.NoError(t, err, out)
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

// TestStopWhileTheBootIsHeldOnAFullDisk is E12 black box: `once --resume` resumes
// a being whose state directory sits on a full tmpfs, so its boot's
// durable write is held and retried. SIGTERM must end it within the
// shutdown grace, failed: exit 4 with the state sentence, no model
// called, and the state as the last good run left it. It needs root.
func TestStopWhileTheBootIsHeldOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounts a size-limited tmpfs and must run as root")
	}
	t.Parallel()
	w := newWorld(t, `{}`)
	mnt := mountTmpfs(t, filepath.Join(w.dir, "disk"))
	w.stateDir = filepath.Join(mnt, testkit.StateDir)
	w.env["SINGULARITY_STATE_DIR"] = w.stateDir
	w.brama.Enqueue(bramatest.TextReply("A first life.", bramatest.Usage(100, 10)))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)
	before := w.loadState()

	heal := fillDisk(t, mnt)
	p := w.start("once", "--resume")
	first := waitStderrCount(t, p, 1, diskWait)
	require.Contains(t, first, syscall.ENOSPC.Error())
	stopped := time.Now()
	p.signal(syscall.SIGTERM)
	grace := 2 * time.Second // SINGULARITY_SHUTDOWN_GRACE_SECS of newWorld
	r = p.wait(grace + diskWait)
	took := time.Since(stopped)
	t.Logf("stopped %v after SIGTERM (grace %v), exit %d: %s", took.Round(time.Millisecond), grace, r.code, r.errorLine())
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Regexp(t, `^singularity: state: boot given up at shutdown: storage unavailable: .*`+syscall.ENOSPC.Error(), r.errorLine())
	assert.Len(t, w.brama.Completions(), 1, "the held boot calls no model")

	heal()
	after := w.loadState()
	assert.Equal(t, before.Budget, after.Budget, "nothing of the second run took effect")
	events, err := state.ReadAll(w.stateDir)
	require.NoError(t, err)
	require.NoError(t, testkit.CheckInvariant(after.Budget, events))
}
