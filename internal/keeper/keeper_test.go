package keeper

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPath: the dedicated keeper is used only when an executable regular
// file of that name sits beside the runtime's binary.
func TestPath(t *testing.T) {
	for _, tc := range []struct {
		name     string
		beside   func(t *testing.T, path string)
		dedicate bool
	}{
		{"nothing beside", func(*testing.T, string) {}, false},
		{"an executable beside", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755))
		}, true},
		{"a file that is not executable", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o644))
		}, false},
		{"a directory of that name", func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o755))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			self := filepath.Join(dir, "singularity")
			require.NoError(t, os.WriteFile(self, nil, 0o755))
			tc.beside(t, filepath.Join(dir, Binary))
			want := self
			if tc.dedicate {
				want = filepath.Join(dir, Binary)
			}
			require.Equal(t, want, Path(self))
		})
	}
}

// TestProcParent reads this process's own parent and group.
func TestProcParent(t *testing.T) {
	ppid, pgid, ok := ProcParent(os.Getpid())
	require.True(t, ok)
	require.Equal(t, os.Getppid(), ppid)
	require.Equal(t, syscall.Getpgrp(), pgid)
	_, _, ok = ProcParent(-1)
	require.False(t, ok)
}
