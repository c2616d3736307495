package journalview_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/state"
)

// TestViewsRefuseUnboundedJournals: the Follower and Tail refuse a
// journal that is not a regular file and one whose line passes
// state.MaxLine, finished or still being written, with the sentence of
// the state package, and never take such a file in whole (a sparse TiB
// would not fit in memory).
func TestViewsRefuseUnboundedJournals(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want string // after "state: journal <path>"
	}{
		{"symlink to /dev/zero", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink("/dev/zero", path))
		}, " is not a regular file"},
		{"FIFO", func(t *testing.T, path string) {
			require.NoError(t, syscall.Mkfifo(path, 0o600))
		}, " is not a regular file"},
		{"unfinished line over the cap", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("{\"type\":\"warning\",\"seq\":1}\n"), 0o600))
			require.NoError(t, os.Truncate(path, 1<<40))
		}, " line 2: line longer than the 16 MiB cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, state.JournalFile)
			tt.make(t, path)
			_, err := journalview.NewFollower(dir).Next()
			require.Error(t, err)
			assert.Equal(t, "state: journal "+path+tt.want, err.Error(), "Follower")
			_, err = journalview.Tail(dir, 5)
			require.Error(t, err)
			assert.Equal(t, "state: journal "+path+tt.want, err.Error(), "Tail")
		})
	}
}

func TestReadBeingRefusesAStateFileOverTheCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, state.StateFile)
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	require.NoError(t, os.Truncate(path, state.MaxCheckpoint+1))
	_, err := journalview.ReadBeing(dir)
	require.Error(t, err)
	assert.Equal(t, "state: state file "+path+" is larger than the 256 MiB cap", err.Error())
}
