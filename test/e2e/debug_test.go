package e2e_test

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry is one path of a directory tree: its mode and, for a file, its
// contents' digest.
type entry struct {
	mode   fs.FileMode
	digest [32]byte
}

// snapshot is every path under root (root itself as "."), with its mode
// and contents; nil when root does not exist.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	tree := map[string]entry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode()}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.digest = sha256.Sum256(data)
		}
		tree[rel] = e
		return nil
	})
	require.NoError(t, err)
	return tree
}

// TestBusyDebugPortLeavesNothingBehind: when --debug-addr names a port
// already taken, once and run are refused before the boot writes
// anything (docs/state.md#boot-gates): no state directory appears for a
// fresh being, an existing one keeps every byte and mode, and the same
// command succeeds once the port is free.
func TestBusyDebugPortLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() }) // not defer: the subtests run after this function returns
	addr := busy.Addr().String()
	wantLine := "singularity: runtime: debug endpoint: listen tcp " + addr + ": bind: address already in use"

	// refused runs command against the busy port and asserts the refusal
	// left the whole world (state directory, workspace, Las files) as it
	// was, and that no completion was asked of Brama.
	refused := func(t *testing.T, w *world, args ...string) {
		t.Helper()
		before := snapshot(t, w.dir)
		completions := len(w.brama.Completions())
		r := w.run(append(args, "--debug-addr", addr)...)
		assert.Equal(t, 5, r.code, "stderr:\n%s", r.stderr)
		assert.Equal(t, wantLine, r.errorLine())
		assert.Empty(t, r.stdout)
		assert.Equal(t, before, snapshot(t, w.dir), "the refused boot changed the world")
		assert.Len(t, w.brama.Completions(), completions)
	}

	t.Run("fresh state directory", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, `{}`)
		w.brama.SetHandler(textReplies(10, 5))
		for _, command := range []string{"once", "run"} {
			refused(t, w, command)
			assert.NoDirExists(t, w.stateDir, "%s created the state directory", command)
		}
		// The refusal is not sticky: with the port free the same command
		// boots the fresh being it was asked for.
		r := w.run("once")
		require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
		assert.FileExists(t, filepath.Join(w.stateDir, "state.json"))
	})

	t.Run("empty state directory keeps its mode", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, `{}`)
		require.NoError(t, os.Mkdir(w.stateDir, 0o700))
		require.NoError(t, os.Chmod(w.stateDir, 0o755)) // an accepted boot would tighten it
		for _, command := range []string{"once", "run"} {
			refused(t, w, command)
		}
		info, err := os.Stat(w.stateDir)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o755), info.Mode().Perm())
	})

	t.Run("existing state resumed", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, `{}`)
		w.brama.SetHandler(textReplies(10, 5))
		r := w.run("once")
		require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
		require.FileExists(t, filepath.Join(w.stateDir, "state.json"))
		require.FileExists(t, filepath.Join(w.stateDir, "activity.jsonl"))
		for _, command := range []string{"once", "run"} {
			refused(t, w, command, "--resume")
		}
		// Resuming with the port free continues from cycle 1.
		r = w.run("once", "--resume")
		require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
		assert.Equal(t, uint64(2), w.loadState().Cycle)
	})
}
