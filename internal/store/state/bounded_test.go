package state

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeros is an endless source of zero bytes that counts what it gives.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestLineReaderStopsAtTheCap: a line without end is refused once the
// cap is passed, having taken in no more than the cap and one buffer:
// what the reader holds is bounded whatever the source.
func TestLineReaderStopsAtTheCap(t *testing.T) {
	const limit = 1 << 20
	src := &zeros{}
	r := NewLineReader(src, limit)
	line, err := r.ReadLine()
	require.ErrorIs(t, err, ErrLineTooLong)
	assert.Nil(t, line)
	assert.LessOrEqual(t, src.n, int64(limit+64<<10), "bytes read from the source")
	assert.LessOrEqual(t, cap(r.buf), 2*limit, "bytes held")
}

func TestLineReaderLines(t *testing.T) {
	const limit = 100 << 10 // more than one buffer
	long := strings.Repeat("x", limit)
	tests := []struct {
		name  string
		input string
		lines []string // every line ReadLine returns before the end
		last  string   // returned with the end
		err   error
	}{
		{"empty", "", nil, "", io.EOF},
		{"lines", "a\nbc\n", []string{"a\n", "bc\n"}, "", io.EOF},
		{"unterminated tail", "a\nb", []string{"a\n"}, "b", io.EOF},
		{"at the cap", long + "\n", []string{long + "\n"}, "", io.EOF},
		{"tail at the cap", long, nil, long, io.EOF},
		{"over the cap", long + "x\n", nil, "", ErrLineTooLong},
		{"tail over the cap", "a\n" + long + "x", []string{"a\n"}, "", ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewLineReader(strings.NewReader(tt.input), limit)
			var got []string
			for {
				line, err := r.ReadLine()
				if err != nil {
					require.ErrorIs(t, err, tt.err)
					assert.Equal(t, tt.last, string(line))
					break
				}
				got = append(got, string(line))
			}
			assert.Equal(t, tt.lines, got)
		})
	}
}

// within fails the test if f does not return within a generous
// deadline: a reader that blocks on a FIFO shows as a failure.
func within[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("blocked")
		panic("unreachable")
	}
}

// unbounded are the files no reader may take in whole or wait on.
var unbounded = []struct {
	name string
	make func(t *testing.T, path string)
}{
	{"symlink to /dev/zero", func(t *testing.T, path string) { require.NoError(t, os.Symlink("/dev/zero", path)) }},
	{"FIFO", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o600)) }},
	{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, DirMode)) }},
}

func TestLoadRefusesAnUnboundedStateFile(t *testing.T) {
	for _, tt := range unbounded {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, StateFile)
			tt.make(t, path)
			_, err := within(t, func() (*Being, error) { return Load(dir) })
			require.Error(t, err)
			assert.Equal(t, "state: state file "+path+" is not a regular file", err.Error())
		})
	}
	t.Run("over the cap", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, StateFile)
		require.NoError(t, os.WriteFile(path, nil, FileMode))
		require.NoError(t, os.Truncate(path, MaxCheckpoint+1)) // sparse: no room taken
		_, err := Load(dir)
		require.Error(t, err)
		assert.Equal(t, "state: state file "+path+" is larger than the 256 MiB cap", err.Error())
	})
}

// TestJournalReadersRefuseAnUnboundedJournal: ReadAll (status), the
// being's own open at boot (ReopenJournal) and at a fresh start
// (OpenJournal) refuse alike, with the same sentence.
func TestJournalReadersRefuseAnUnboundedJournal(t *testing.T) {
	readers := []struct {
		name string
		read func(dir string) error
	}{
		{"ReadAll", func(dir string) error { _, err := ReadAll(dir); return err }},
		{"ReopenJournal", func(dir string) error {
			s, err := Open(dir)
			if err == nil {
				_, err = s.ReopenJournal()
			}
			return err
		}},
		{"OpenJournal", func(dir string) error {
			_, err := OpenJournal(filepath.Join(dir, JournalFile), Now(), 1)
			return err
		}},
	}
	for _, reader := range readers {
		for _, tt := range unbounded {
			t.Run(reader.name+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, JournalFile)
				tt.make(t, path)
				_, err := within(t, func() (struct{}, error) { return struct{}{}, reader.read(dir) })
				require.Error(t, err)
				assert.Equal(t, "state: journal "+path+" is not a regular file", err.Error())
			})
		}
		t.Run(reader.name+"/line over the cap", func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, JournalFile)
			line := append(bytes.Repeat([]byte{'x'}, MaxLine+1), '\n')
			require.NoError(t, os.WriteFile(path, append([]byte("{}\n"), line...), FileMode))
			err := reader.read(dir)
			require.ErrorIs(t, err, ErrLineTooLong)
			assert.Equal(t, "state: journal "+path+" line 2: line longer than the 16 MiB cap", err.Error())
		})
	}
}

// TestOpenJournalRefusesATornTailOverTheCap: a tail without newline
// longer than any line is not taken for a torn append and cut: the
// journal is refused, untouched, without reading it all.
func TestOpenJournalRefusesATornTailOverTheCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), FileMode))
	require.NoError(t, os.Truncate(path, 1<<40)) // a sparse TiB of zeros
	_, err := OpenJournal(path, Now(), 1)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrLineTooLong))
	assert.Equal(t, "state: journal "+path+": last line longer than the 16 MiB cap", err.Error())
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<40), info.Size())
}

func TestEncodeRefusesAnEventOverTheLineCap(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), JournalFile), Now(), 1)
	require.NoError(t, err)
	_, _, err = j.Encode([]Event{Warning(Now(), 1, strings.Repeat("x", MaxLine))})
	require.ErrorIs(t, err, ErrLineTooLong)
	assert.Equal(t, uint64(1), j.NextSeq())
}
