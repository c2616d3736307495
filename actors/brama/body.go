package brama

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/wisent/singularity/internal/store/state"
)

// completionBody is one completion request's body, kept in parts: the
// small ones made for the request, the window's packed messages as the
// being holds them, and the catalogue every being shares. Its bytes are
// made as they are read, one message at a time, so that the requests
// waiting for a worker and those on the wire hold a few kilobytes each,
// not a copy of a window of two hundred messages. The parts never change:
// every reading gives the same bytes, its digest and its size.
type completionBody struct {
	// head is the body up to the window: the model, the messages key and
	// the round's own messages; comma says the window's first message
	// follows one of them.
	head    []byte
	encoded state.Encoded
	comma   bool
	// tail closes the messages and holds what comes before the
	// catalogue; tools is the catalogue (omitted when empty); end the
	// rest.
	tail, tools, end []byte
	size             int
}

func newCompletionBody(head []byte, encoded state.Encoded, comma bool, tail, tools, end []byte) *completionBody {
	b := &completionBody{head: head, encoded: encoded, comma: comma, tail: tail, tools: tools, end: end}
	b.size = len(head) + len(tail) + len(tools) + len(end)
	if n := len(encoded); n > 0 {
		b.size += encoded.Bytes() - 2 // without the brackets
		if comma {
			b.size++
		}
	}
	return b
}

// sha256 is the lowercase hex SHA-256 of the body, which Brama's
// signature covers (docs/brama.md#the-completion-request).
func (b *completionBody) sha256() string {
	h := sha256.New()
	_, _ = b.reader().WriteTo(h) // a hash never fails to write
	return hex.EncodeToString(h.Sum(nil))
}

// reader reads the body from its start.
func (b *completionBody) reader() *bodyReader { return &bodyReader{body: b} }

// bodyReader reads a completionBody part by part: part 0 is the head,
// parts 1 to n the window's messages (each with its leading comma), then
// the tail, the catalogue and the end. It is an io.ReadCloser, and an
// io.WriterTo, which the HTTP transport and io.Copy use to write each
// part straight to the connection's buffer.
type bodyReader struct {
	body *completionBody
	part int
	left []byte // what is left of the current part
	msg  []byte // the buffer a message is unpacked into
}

// next returns part i's bytes, or false past the last part.
func (r *bodyReader) next(i int) ([]byte, bool) {
	b := r.body
	n := len(b.encoded)
	switch {
	case i == 0:
		return b.head, true
	case i <= n:
		r.msg = r.msg[:0]
		if i > 1 || b.comma {
			r.msg = append(r.msg, ',')
		}
		r.msg = b.encoded[i-1].AppendTo(r.msg)
		return r.msg, true
	case i == n+1:
		return b.tail, true
	case i == n+2:
		return b.tools, true
	case i == n+3:
		return b.end, true
	}
	return nil, false
}

// Read fills p from as many parts as fit: a connection written from a
// Read is written in a few large pieces, not one per message.
func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.left) == 0 {
			part, ok := r.next(r.part)
			if !ok {
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			r.part++
			r.left = part
			continue
		}
		k := copy(p[n:], r.left)
		r.left = r.left[k:]
		n += k
	}
	return n, nil
}

// WriteTo writes what is left of the body to w.
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.left) > 0 {
			n, err := w.Write(r.left)
			total += int64(n)
			r.left = r.left[n:]
			if err != nil {
				return total, err
			}
		}
		part, ok := r.next(r.part)
		if !ok {
			return total, nil
		}
		r.part++
		r.left = part
	}
}

// Close does nothing: the body holds no resource.
func (r *bodyReader) Close() error { return nil }
