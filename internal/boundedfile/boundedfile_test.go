package boundedfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRead: only a regular file within the cap is read; everything else
// is refused at once, without reading it whole or waiting on it.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	require.NoError(t, os.WriteFile(path("small"), []byte("0123456789"), 0o600))
	require.NoError(t, os.WriteFile(path("empty"), nil, 0o600))
	require.NoError(t, syscall.Mkfifo(path("fifo"), 0o600))
	require.NoError(t, os.Symlink("/dev/zero", path("zero")))
	require.NoError(t, os.WriteFile(path("sparse"), nil, 0o600))
	require.NoError(t, os.Truncate(path("sparse"), 1<<40))
	require.NoError(t, os.Mkdir(path("dir"), 0o700))

	tooLarge := func(t *testing.T, err error) {
		var large *TooLargeError
		require.ErrorAs(t, err, &large)
		assert.Equal(t, int64(10), large.Cap)
	}
	cases := []struct {
		name  string
		path  string
		max   int64
		want  string
		check func(t *testing.T, err error)
	}{
		{"within the cap", path("small"), 10, "0123456789", nil},
		{"empty", path("empty"), 10, "", nil},
		{"one byte past the cap", path("small"), 9, "", func(t *testing.T, err error) {
			var large *TooLargeError
			require.ErrorAs(t, err, &large)
			assert.EqualError(t, err, "larger than the 9 bytes cap")
		}},
		{"a sparse TiB", path("sparse"), 10, "", tooLarge},
		{"a FIFO without a writer", path("fifo"), 10, "", func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrNotRegular) }},
		{"a link to /dev/zero", path("zero"), 10, "", func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrNotRegular) }},
		{"a directory", path("dir"), 10, "", func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrNotRegular) }},
		{"missing", path("missing"), 10, "", func(t *testing.T, err error) {
			assert.ErrorIs(t, err, fs.ErrNotExist)
			var pe *fs.PathError
			assert.True(t, errors.As(err, &pe), "the os error is returned as it is")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := Read(tc.path, tc.max)
			if tc.check == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(data))
				return
			}
			assert.Nil(t, data)
			tc.check(t, err)
		})
	}
}

// TestReadOpenRefusesGrowth: a file that grows past the cap after it
// was opened is refused, never read on.
func TestReadOpenRefusesGrowth(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "grows")
	require.NoError(t, os.WriteFile(path, []byte("abc"), 0o600))
	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20), 0o600))
	_, err = ReadOpen(f, 3)
	var large *TooLargeError
	require.ErrorAs(t, err, &large)
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		1 << 20: "1 MiB", 256 << 20: "256 MiB", 64 << 10: "64 KiB", 1500: "1500 bytes", 3 << 19: "1536 KiB",
	} {
		assert.Equal(t, want, Size(n), n)
	}
}
