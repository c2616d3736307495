package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// pidsRecorded reads the "<what> <pid>" lines of the example Las's
// deliveries file.
func pidsRecorded(t *testing.T, deliveries, what string) []int {
	t.Helper()
	b, err := os.ReadFile(deliveries)
	require.NoError(t, err)
	var out []int
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, what+" "); ok {
			pid, err := strconv.Atoi(rest)
			require.NoError(t, err)
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid is a process that has not exited (a zombie
// has exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// TestSetsidGrandchildEndsWithRun: a Las grandchild that called setsid
// (out of the Las's process group) is ended when its being stops on
// SIGINT: the runtime is its child subreaper (docs/las.md#leftovers).
func TestSetsidGrandchildEndsWithRun(t *testing.T) {
	t.Parallel()
	deliveries := filepath.Join(t.TempDir(), "deliveries")
	w := newWorld(t, fmt.Sprintf(`{"grandchild":true,"setsid_grandchild":true,"deliveries_file":%q}`, deliveries))
	w.brama.SetHandler(textReplies(100, 10))
	p := w.start("run")
	w.waitJournal(waitLimit, "a cycle", cyclesStarted(1))
	grandchildren := pidsRecorded(t, deliveries, "grandchild")
	require.Len(t, grandchildren, 1)
	require.True(t, alive(grandchildren[0]))
	require.Equal(t, grandchildren[0], sessionOf(t, grandchildren[0]), "the grandchild leads a session of its own")

	p.signal(os.Interrupt)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	require.False(t, alive(grandchildren[0]), "the setsid grandchild outlived the runtime")
}

// TestSIGKILLOfRunLeavesNoSurvivor: after SIGKILL of run, a Las that
// ignores the end of its stdin, and its child, are gone too: every Las is
// started with a parent-death signal, and the Las keeper ends the rest of
// its tree (docs/las.md#leftovers). Both keepers: the dedicated
// singularity-keeper installed beside the runtime, and the runtime's own
// binary where it is not.
func TestSIGKILLOfRunLeavesNoSurvivor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		bin    func(testing.TB) string
		keeper string // the file name of the Las's parent
	}{
		{"dedicated keeper", testkit.Singularity, "singularity-keeper"},
		{"the runtime as keeper", testkit.LoneSingularity, "singularity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			deliveries := filepath.Join(t.TempDir(), "deliveries")
			w := newWorld(t, fmt.Sprintf(`{"grandchild":true,"ignore_stdin_close":true,"record_pid":true,"deliveries_file":%q}`, deliveries))
			w.bin = tc.bin(t)
			w.brama.SetHandler(textReplies(100, 10))
			p := w.start("run")
			w.waitJournal(waitLimit, "a cycle", cyclesStarted(1))
			las := pidsRecorded(t, deliveries, "las")
			pids := append(las, pidsRecorded(t, deliveries, "grandchild")...)
			require.Len(t, pids, 2)
			for _, pid := range pids {
				require.True(t, alive(pid))
			}
			keeper := parentOf(t, las[0])
			require.NotEqual(t, p.cmd.Process.Pid, keeper, "the Las runs under a keeper")
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", keeper))
			require.NoError(t, err)
			require.Equal(t, tc.keeper, filepath.Base(exe), "the Las's keeper")
			pids = append(pids, keeper)

			p.signal(syscall.SIGKILL)
			p.wait(waitLimit)
			// The kernel delivers the parent-death signal as the runtime
			// dies; the processes end a moment later.
			deadline := time.Now().Add(10 * time.Second)
			for _, pid := range pids {
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				require.False(t, alive(pid), "process %d outlived SIGKILL of run", pid)
			}
		})
	}
}

// parentOf reads the parent pid of pid from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	ppid, err := strconv.Atoi(string(f[1])) // state ppid
	require.NoError(t, err)
	return ppid
}

// sessionOf reads the session id of pid from /proc.
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	sid, err := strconv.Atoi(string(f[3])) // state ppid pgrp session
	require.NoError(t, err)
	return sid
}
