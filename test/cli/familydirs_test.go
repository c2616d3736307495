package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// editRoot rewrites the state_dir of every child record in the root's
// state.json under sandbox with to (given the child's id).
func editRoot(t *testing.T, sandbox string, to func(id string) string) {
	t.Helper()
	path := filepath.Join(sandbox, "state", state.StateFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	mind := doc["mind"].(map[string]any)
	children, _ := mind["children"].([]any)
	require.NotEmpty(t, children)
	for _, c := range children {
		rec := c.(map[string]any)
		rec["state_dir"] = to(rec["id"].(string))
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o600))
}

// TestMovedFamilyResumesWhole: child records hold their directory
// relative to their parent's, a family copied elsewhere resumes whole
// from the copy, and it never touches the original's children, even when
// its records are absolute paths into the original (as older states
// wrote them).
func TestMovedFamilyResumesWhole(t *testing.T) {
	t.Parallel()
	original := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "2", "--dir", original)
	require.Equal(t, 0, demo.code, demo.stderr)
	root, err := state.Load(filepath.Join(original, "state"))
	require.NoError(t, err)
	require.NotEmpty(t, root.Mind.Children)
	for _, c := range root.Mind.Children {
		assert.Equal(t, filepath.Join("children", c.ID), c.StateDir, "recorded relative to the parent")
	}

	moved := filepath.Join(t.TempDir(), "moved")
	cp := exec.Command("cp", "-a", original, moved)
	out, err := cp.CombinedOutput()
	require.NoError(t, err, string(out))
	editRoot(t, moved, func(id string) string { return filepath.Join(original, "state", "children", id) })
	before := testkit.Snapshot(t, original)

	again := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", moved)
	require.Equal(t, 0, again.code, again.stderr)
	assert.Equal(t, before, testkit.Snapshot(t, original), "the original family was not touched")
	st := status(t, filepath.Join(moved, "state"), "--format", "json")
	require.Equal(t, 0, st.code, st.stderr)
	s := parseStatus(t, st.stdout)
	assert.Equal(t, "exact", s.FamilyLedger)
	assert.GreaterOrEqual(t, len(s.Beings), 1+len(root.Mind.Children), "every child read from the copy")
	for _, c := range root.Mind.Children {
		_, err := state.Load(filepath.Join(moved, "state", "children", c.ID))
		assert.NoError(t, err)
	}
}

// TestChildRecordsOutsideAreRefused: a record that points outside its
// parent's children/ (an ancestor, another family) is refused with a
// sentence and never followed; a child directory that is a link back to
// an ancestor makes status end, reporting it, instead of looping.
func TestChildRecordsOutsideAreRefused(t *testing.T) {
	t.Parallel()
	sandbox := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", sandbox)
	require.Equal(t, 0, demo.code, demo.stderr)
	stateDir := filepath.Join(sandbox, "state")

	t.Run("an ancestor", func(t *testing.T) {
		editRoot(t, sandbox, func(string) string { return "children/../.." })
		st := status(t, stateDir)
		assert.Contains(t, st.stdout+st.stderr, "state_dir children/../.. is not a directory of its parent's children/")
	})
	t.Run("a link back to the root", func(t *testing.T) {
		editRoot(t, sandbox, func(id string) string { return filepath.Join("children", id) })
		root, err := state.Load(stateDir)
		require.NoError(t, err)
		id := root.Mind.Children[0].ID
		child := filepath.Join(stateDir, "children", id)
		require.NoError(t, os.Rename(child, child+".real"))
		require.NoError(t, os.Symlink(stateDir, child))
		done := make(chan result, 1)
		go func() { done <- status(t, stateDir) }()
		select {
		case st := <-done:
			assert.Contains(t, st.stdout+st.stderr, "child directory "+child+" is a symbolic link")
		case <-time.After(time.Minute):
			t.Fatal("status did not end on a family that loops")
		}
		require.NoError(t, os.Remove(child))
		require.NoError(t, os.Rename(child+".real", child))
	})
	r := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", sandbox)
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, strings.Contains(r.stderr, "symbolic link"))
}
