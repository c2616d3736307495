package mcpwire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes is the longest line the client accepts from Las: real
// servers send lines of many megabytes, and a longer one breaks the
// session (docs/las.md#framing-robustness).
const MaxLineBytes = 32 << 20

// ErrLineTooLong reports a line longer than the reader's limit. The rest
// of the stream cannot be trusted to be framed, so the session is over.
var ErrLineTooLong = errors.New("line longer than the limit")

// LineReader reads newline-terminated lines of bounded length. Each line
// it returns is a fresh slice the caller may keep.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// NewLineReader reads lines of at most max bytes (without the newline)
// from r; max <= 0 selects MaxLineBytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = MaxLineBytes
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next line without its trailing "\n" (and "\r").
// At the end of the stream it returns io.EOF; a final line without a
// newline is returned first. A line over the limit yields ErrLineTooLong;
// memory held for it stays bounded by the limit.
func (l *LineReader) ReadLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(line)+len(chunk) > l.max+2 {
			return nil, l.tooLong()
		}
		switch {
		case err == nil:
			line = append(line, chunk...)
			line = trimEOL(line)
			if len(line) > l.max {
				return nil, l.tooLong()
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
		case errors.Is(err, io.EOF):
			if len(line)+len(chunk) == 0 {
				return nil, io.EOF
			}
			line = append(line, chunk...)
			if len(line) > l.max {
				return nil, l.tooLong()
			}
			return line, nil
		default:
			return nil, err
		}
	}
}

func (l *LineReader) tooLong() error {
	return fmt.Errorf("%w of %d bytes", ErrLineTooLong, l.max)
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}
