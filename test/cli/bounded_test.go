package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// runWithin is run with a deadline: a command still running after it
// is killed and the test fails, so a reader that blocks or never ends
// shows as a failure rather than a hung test.
func runWithin(t *testing.T, deadline time.Duration, args ...string) result {
	t.Helper()
	r, _ := runMeasured(t, deadline, map[string]string{}, args...)
	return r
}

// runMeasured is runWithin in the environment env, which also returns
// the command's peak resident memory in bytes.
func runMeasured(t *testing.T, deadline time.Duration, env map[string]string, args ...string) (result, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.Singularity(t), args...)
	cmd.Env = testkit.Environ(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "singularity %v did not finish within %v", args, deadline)
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	return result{stdout.String(), stderr.String(), testkit.ExitCode(t, err)}, peak
}

// TestStatusAndJournalRefuseUnboundedFiles: a journal or a state.json
// that is not a regular file, a journal line over the 16 MiB cap and a
// state.json over the 256 MiB cap are refused by status and journal with
// a state sentence naming the file, exit 4, at once: nothing blocks on a
// FIFO and nothing reads a device or a huge file whole.
func TestStatusAndJournalRefuseUnboundedFiles(t *testing.T) {
	t.Parallel()
	demoDir := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", demoDir)
	require.Equal(t, 0, demo.code, demo.stderr)
	family := filepath.Join(demoDir, "state")

	cases := []struct {
		name  string
		file  string // state.JournalFile or state.StateFile
		make  func(t *testing.T, path string)
		wants string // the sentence after "<path> ", a regexp
	}{
		{"journal symlinked to /dev/zero", state.JournalFile, symlinkZero, `is not a regular file`},
		{"journal FIFO", state.JournalFile, fifo, `is not a regular file`},
		{"journal line over the cap", state.JournalFile, longLine, `line \d+: line longer than the 16 MiB cap`},
		{"journal of a sparse GiB without newline", state.JournalFile, sparse(1 << 30), `line 1: line longer than the 16 MiB cap`},
		{"state.json symlinked to /dev/zero", state.StateFile, symlinkZero, `is not a regular file`},
		{"state.json FIFO", state.StateFile, fifo, `is not a regular file`},
		{"state.json over the cap", state.StateFile, sparse(state.MaxCheckpoint + 1), `is larger than the 256 MiB cap`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "state")
			require.NoError(t, os.CopyFS(root, os.DirFS(family)))
			path := filepath.Join(root, tc.file)
			require.NoError(t, os.Remove(path))
			tc.make(t, path)
			what := "journal"
			if tc.file == state.StateFile {
				what = "state file"
			}
			sentence := `state: .*` + what + ` ` + regexp.QuoteMeta(path) + `:? ` + tc.wants + `\n$`
			for _, args := range [][]string{
				{"status", "--state-dir", root},
				{"status", "--state-dir", root, "--format", "json"},
				{"journal", "--state-dir", root},
				{"journal", "--state-dir", root, "--follow"},
			} {
				r := runWithin(t, 30*time.Second, args...)
				assert.Equal(t, 4, r.code, "%v: %s", args, r.stderr)
				assert.Regexp(t, `^singularity: `+sentence, r.stderr, "%v", args)
			}
		})
	}
}

func symlinkZero(t *testing.T, path string) {
	require.NoError(t, os.Symlink("/dev/zero", path))
}

func fifo(t *testing.T, path string) {
	require.NoError(t, syscall.Mkfifo(path, 0o600))
}

// longLine makes a journal whose first line is MaxLine+1 bytes
// long.
func longLine(t *testing.T, path string) {
	line := append(bytes.Repeat([]byte{'x'}, state.MaxLine+1), '\n')
	require.NoError(t, os.WriteFile(path, line, 0o600))
}

// sparse makes a file of size bytes, all zero, that takes no room.
func sparse(size int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.Truncate(path, size))
	}
}
