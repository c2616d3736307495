package state

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLastWords: the file is made at its fixed size, empty; words are
// written over it in place and read back; words are newer than a journal
// up to their seq; preparing again empties the words a journal took
// (older than its last seq) and keeps newer ones; a reason too long for
// the record is cut, and the record still reads.
func TestLastWords(t *testing.T) {
	at := Time{time.Date(2026, 12, 7, 9, 15, 2, 123456000, time.UTC)}
	words := LastWords{Status: StatusFailed, Reason: "state: step given up at shutdown: storage unavailable: no space left on device", At: at, Cycle: 4, Seq: 41}
	tests := []struct {
		name    string
		prepare uint64 // PrepareLastWords's through after the words are written
		kept    bool
	}{
		{"the journal took them", 43, false},
		{"nothing journaled since", 41, true},
		{"an earlier checkpoint", 40, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{dir: t.TempDir()}
			got, err := ReadLastWords(s.dir)
			require.NoError(t, err)
			assert.Nil(t, got, "no file: no words")
			require.NoError(t, s.PrepareLastWords(0))
			info, err := os.Stat(s.Path(LastWordsFile))
			require.NoError(t, err)
			assert.EqualValues(t, LastWordsSize, info.Size())
			assert.Equal(t, FileMode, info.Mode().Perm())
			got, err = ReadLastWords(s.dir)
			require.NoError(t, err)
			assert.Nil(t, got, "a prepared file holds none")

			require.NoError(t, s.WriteLastWords(words))
			got, err = ReadLastWords(s.dir)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, words, *got)
			assert.True(t, got.Newer(41))
			assert.False(t, got.Newer(42))

			require.NoError(t, s.PrepareLastWords(tc.prepare))
			got, err = ReadLastWords(s.dir)
			require.NoError(t, err)
			if tc.kept {
				assert.Equal(t, &words, got)
			} else {
				assert.Nil(t, got)
			}
		})
	}

	t.Run("a long reason", func(t *testing.T) {
		s := &Store{dir: t.TempDir()}
		long := words
		long.Reason = strings.Repeat("é\"", LastWordsSize)
		require.NoError(t, s.WriteLastWords(long))
		got, err := ReadLastWords(s.dir)
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.True(t, strings.HasSuffix(got.Reason, "…"))
		assert.True(t, strings.HasPrefix(long.Reason, strings.TrimSuffix(got.Reason, "…")))
		info, err := os.Stat(s.Path(LastWordsFile))
		require.NoError(t, err)
		assert.EqualValues(t, LastWordsSize, info.Size())
	})
}

// TestLastWordsOnAFullDisk writes last words on a real tmpfs filled to
// the last byte: a file prepared while there was room takes them, in
// place; one that was not made in time cannot be. It needs root (it
// mounts); elsewhere it is skipped.
func TestLastWordsOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounts a size-limited tmpfs and must run as root")
	}
	mnt := t.TempDir()
	if out, err := mountBounded("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := mountBounded("umount", mnt); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	prepared, late := &Store{dir: filepath.Join(mnt, "prepared")}, &Store{dir: filepath.Join(mnt, "late")}
	for _, s := range []*Store{prepared, late} {
		require.NoError(t, os.Mkdir(s.dir, DirMode))
	}
	require.NoError(t, prepared.PrepareLastWords(0))

	filler, err := os.Create(filepath.Join(mnt, "filler"))
	require.NoError(t, err)
	defer filler.Close()
	chunk := make([]byte, 4096)
	for i := 0; ; i++ {
		require.Less(t, i, 1024, "a 256 KiB tmpfs never filled")
		if _, err = filler.Write(chunk); err != nil {
			break
		}
	}
	require.True(t, errors.Is(err, syscall.ENOSPC), "filling ends with ENOSPC, not %v", err)

	words := LastWords{Status: StatusFailed, Reason: "state: boot given up at shutdown: storage unavailable: no space left on device", At: Time{Now().Truncate(time.Microsecond)}, Seq: 7}
	require.NoError(t, prepared.WriteLastWords(words), "a prepared file needs no new block")
	got, err := ReadLastWords(prepared.dir)
	require.NoError(t, err)
	assert.Equal(t, &words, got)
	assert.ErrorIs(t, late.WriteLastWords(words), syscall.ENOSPC, "a file not made in time needs a block the disk lacks")
}

// mountBounded runs mount or umount with a deadline.
func mountBounded(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
