package state

import (
	"bufio"
	"errors"
	"io"
	"os"

	"github.com/wisent/singularity/internal/boundedfile"
	"github.com/wisent/singularity/supervision/fault"
)

// Caps on what a reader of a state directory takes in
// (docs/state.md#caps). Every reader of state.json and of the journal,
// the being at boot and the offline commands alike, applies them.
const (
	// MaxLine is the longest journal line, its newline not counted. The
	// largest event the runtime writes is a model reply or a message of
	// the window, far below it.
	MaxLine = 16 << 20
	// MaxCheckpoint is the largest state.json.
	MaxCheckpoint = 256 << 20
)

// ErrLineTooLong reports a journal line longer than MaxLine.
var ErrLineTooLong = errors.New("line longer than the 16 MiB cap")

// OpenRegular opens path for reading and returns it only if it is a
// regular file (boundedfile.Open); what names the file in the sentence
// of a refusal ("journal", "state file"). The open never blocks (a FIFO
// or a device is opened non-blocking), and the check is made on what was
// opened, so a path swapped meanwhile cannot slip through. A refusal is
// a state fault: "<what> <path> is not a regular file" or "cannot read
// <what> <path>: <error>".
func OpenRegular(path, what string) (*os.File, error) {
	f, err := boundedfile.Open(path)
	if err != nil {
		return nil, readFault(what, path, err)
	}
	return f, nil
}

// readFault is the state fault of a refused read of the file at path.
func readFault(what, path string, err error) error {
	var large *boundedfile.TooLargeError
	if errors.Is(err, boundedfile.ErrNotRegular) || errors.As(err, &large) {
		return fault.Errorf(fault.ClassState, "%s %s is %w", what, path, err)
	}
	return fault.Errorf(fault.ClassState, "cannot read %s %s: %w", what, path, err)
}

// ReadCheckpoint returns the bytes of the state.json at path: a regular
// file of at most MaxCheckpoint bytes (see OpenRegular), read without
// taking in more than the cap. A larger file is refused with "state file
// <path> is larger than the 256 MiB cap".
func ReadCheckpoint(path string) ([]byte, error) {
	data, err := boundedfile.Read(path, MaxCheckpoint)
	if err != nil {
		return nil, readFault("state file", path, err)
	}
	return data, nil
}

// LineReader reads newline-terminated lines of at most a fixed length
// without ever holding more than that length (and one buffer) of a line.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader returns a reader of the lines of r, each at most max
// bytes, its newline not counted.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next line, its newline included. The slice is
// valid until the next call. At the end of the input it returns what
// follows the last newline (nothing, or a line not terminated) with
// io.EOF. A line longer than the cap is refused with ErrLineTooLong as
// soon as the cap is passed; the reader is then spent.
func (l *LineReader) ReadLine() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		n := len(l.buf) + len(frag)
		if err == nil {
			n-- // the newline
		}
		if n > l.max {
			return nil, ErrLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			l.buf = append(l.buf, frag...)
			continue
		}
		if len(l.buf) == 0 {
			return frag, err
		}
		l.buf = append(l.buf, frag...)
		return l.buf, err
	}
}
