package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/supervision/fault"
)

// nobody is the uid a foreign state directory is chowned to.
const nobody = 65534

// dirMode is the full mode of path (permissions and the setuid, setgid
// and sticky bits), without the directory bit.
func dirMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.True(t, info.IsDir(), "%s is not a directory", path)
	return info.Mode() &^ os.ModeDir
}

// dirOwner is the uid owning path.
func dirOwner(t *testing.T, path string) int {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return int(info.Sys().(*syscall.Stat_t).Uid)
}

// preCreate makes dir with exactly mode (chmod, so the umask plays no part).
func preCreate(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, mode))
	require.Equal(t, mode, dirMode(t, dir))
}

func TestOpenTightensOwnedDirectory(t *testing.T) {
	tests := []struct {
		name string
		mode os.FileMode
	}{
		{"0755", 0o755},
		{"0777", 0o777},
		{"0750", 0o750},
		{"0500 (owner lost write)", 0o500},
		{"0700 stays", 0o700},
		{"setgid and sticky are dropped", 0o755 | os.ModeSetgid | os.ModeSticky},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "being")
			preCreate(t, dir, tt.mode)
			s, err := Open(dir)
			require.NoError(t, err)
			assert.Equal(t, dir, s.Dir())
			assert.Equal(t, DirMode, dirMode(t, dir))
			assert.Equal(t, os.Geteuid(), dirOwner(t, dir))
		})
	}
}

func TestOpenTightensResumedStateDirectory(t *testing.T) {
	// The tightening touches the directory only: state.json keeps its
	// bytes and its mode.
	dir := filepath.Join(t.TempDir(), "being")
	s, err := Open(dir)
	require.NoError(t, err)
	require.NoError(t, s.Create(&Being{SchemaVersion: SchemaVersion, Cycle: 3}))
	require.NoError(t, os.Chmod(dir, 0o777))
	before := fileHash(t, s.Path(StateFile))

	_, err = Open(dir)
	require.NoError(t, err)
	assert.Equal(t, DirMode, dirMode(t, dir))
	assert.Equal(t, before, fileHash(t, s.Path(StateFile)))
	info, err := os.Stat(s.Path(StateFile))
	require.NoError(t, err)
	assert.Equal(t, FileMode, info.Mode().Perm())
}

func TestOpenCreatesDirectory0700(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "being")
	_, err := Open(dir)
	require.NoError(t, err)
	for _, d := range []string{dir, filepath.Join(root, "a", "b"), filepath.Join(root, "a")} {
		assert.Equal(t, DirMode, dirMode(t, d), d)
		assert.Equal(t, os.Geteuid(), dirOwner(t, d), d)
	}
}

func TestOpenRefusesForeignDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowning a directory to another user needs root; run the tests as root to cover the refusal")
	}
	tests := []struct {
		name  string
		mode  os.FileMode
		state bool // a state.json is already there
	}{
		{"0755 empty", 0o755, false},
		{"0777 empty", 0o777, false},
		{"0700 empty", 0o700, false},
		{"0755 with state", 0o755, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "being")
			preCreate(t, dir, tt.mode)
			// A crash leftover, which a refused Open must leave.
			stale := filepath.Join(dir, ".state.json.42.tmp")
			require.NoError(t, os.WriteFile(stale, []byte("{"), FileMode))
			var before [32]byte
			if tt.state {
				data, err := Encode(&Being{SchemaVersion: SchemaVersion, Cycle: 9})
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), data, FileMode))
				before = fileHash(t, filepath.Join(dir, StateFile))
			}
			require.NoError(t, os.Chown(dir, nobody, nobody))
			require.NoError(t, os.Chmod(dir, tt.mode)) // chown may clear setuid/setgid; keep the mode exact

			s, err := Open(dir)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Equal(t, "state: state directory "+dir+" is not owned by this user", err.Error())
			assert.Equal(t, fault.ClassState, fault.ClassOf(err))
			assert.Equal(t, 4, fault.ExitCode(err))

			assert.Equal(t, tt.mode, dirMode(t, dir), "the mode is left as it was")
			assert.Equal(t, nobody, dirOwner(t, dir))
			assert.FileExists(t, stale, "nothing in the directory is touched")
			if tt.state {
				assert.Equal(t, before, fileHash(t, filepath.Join(dir, StateFile)))
			}
		})
	}
}

func TestBootRefusesForeignDirectory(t *testing.T) {
	// A fresh boot (the root's, or a child's: actors/being spawns children
	// through Boot) goes through Open and so is refused before the first
	// state.json is written.
	if os.Geteuid() != 0 {
		t.Skip("chowning a directory to another user needs root; run the tests as root to cover the refusal")
	}
	dir := filepath.Join(t.TempDir(), "being")
	preCreate(t, dir, 0o755)
	require.NoError(t, os.Chown(dir, nobody, nobody))

	_, _, _, err := Boot(dir, false, Identity{}, func() (*Being, error) {
		return &Being{SchemaVersion: SchemaVersion}, nil
	})
	require.Error(t, err)
	assert.Equal(t, "state: state directory "+dir+" is not owned by this user", err.Error())
	assert.Equal(t, 4, fault.ExitCode(err))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused boot leaves no file behind")
	assert.Equal(t, os.FileMode(0o755), dirMode(t, dir))
}
