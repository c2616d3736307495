package state

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/prompt/framing"
)

// Packed is one message of a held conversation: its JSON encoding
// (EncodeMessage) with the phrases every conversation repeats replaced
// by references. A living being holds two hundred of them for its whole
// life, and two thirds of their bytes are the same few sentences: the
// framing message's words around its figures, the JSON keys of a
// message and a tool call, the recent actions repeated within one
// framing. Packed drops those bytes from the heap; every reader gets
// back exactly the bytes EncodeMessage wrote (Unpack, AppendTo), so a
// request, a checkpoint and the archive are byte for byte what they were.
//
// The format lives only in memory, never on disk or the wire. A packed
// message is its JSON text in which the byte packRef, which JSON never
// holds unescaped, starts a reference:
//
//	packRef, i            phrase i of packPhrases (i < len(packPhrases))
//	packRef, packLiteral  the byte packRef itself (not made by EncodeMessage)
//	packRef, 0x80+n-4, hi, lo
//	                      the n bytes (4 ≤ n ≤ 130) that start
//	                      hi<<8|lo bytes back in the unpacked message
//
// Bytes that are no reference are themselves. A message with nothing to
// replace is its JSON text unchanged, so a JSON value made elsewhere is a
// valid Packed too.
type Packed []byte

const (
	packRef     = 0x01
	packLiteral = 0xFF
	packCopy    = 0x80 // first token of a back reference
	// copyMin and copyMax bound a back reference's length: four bytes
	// replace it, so a shorter one would not pay.
	copyMin = 5
	copyMax = packLiteral - 1 - packCopy + 4
	// copyReach is how far back a reference can point.
	copyReach = 1<<16 - 1
)

// packPhrases are the phrases a reference may name, as they appear in an
// encoded message (JSON-escaped where they hold anything JSON escapes).
// The order is the references' numbering, and matters only in memory: a
// longer phrase must come before one it starts with.
var packPhrases = [...]string{
	`{"role":"user","content":"` + framing.Prefix,
	`{"role":"user","content":"`,
	`{"role":"assistant","content":"`,
	`{"role":"tool","content":"`,
	`","tool_call_id":"`,
	`","tool_calls":[{"id":"`,
	`"}},{"id":"`,
	`","type":"function","function":{"name":"`,
	`","arguments":"`,
	`"}}]}`,
	framing.End + `"}`,
	framing.AfterCycle,
	framing.AfterBalance,
	framing.AfterEarned,
	framing.AfterNet,
	framing.AfterModel,
	framing.End,
	`:success, `,
	`:failed, `,
	`:indeterminate, `,
}

// phrasesByFirst lists, for each first byte, the phrases starting with
// it, longest first.
var phrasesByFirst = func() (index [256][]uint8) {
	for i, p := range packPhrases {
		index[p[0]] = append(index[p[0]], uint8(i))
	}
	for _, list := range index {
		for i := 1; i < len(list); i++ { // insertion sort: a handful each
			for j := i; j > 0 && len(packPhrases[list[j]]) > len(packPhrases[list[j-1]]); j-- {
				list[j], list[j-1] = list[j-1], list[j]
			}
		}
	}
	return index
}()

// packHashBits sizes the table of earlier positions a back reference is
// looked for in.
const packHashBits = 10

// Pack packs raw, an encoded message. The result is a slice of its own.
func Pack(raw []byte) Packed {
	return appendPacked(make([]byte, 0, len(raw)), raw)
}

// appendPacked appends raw packed to dst: at each position the longest
// phrase that starts there, else the longest earlier occurrence of at
// least copyMin bytes found through a table of the last position of each
// four-byte prefix, else the byte itself.
func appendPacked(dst, raw []byte) []byte {
	var last [1 << packHashBits]int32 // a position + 1; 0 for none
	hash := func(i int) uint32 {
		v := uint32(raw[i]) | uint32(raw[i+1])<<8 | uint32(raw[i+2])<<16 | uint32(raw[i+3])<<24
		return (v * 2654435761) >> (32 - packHashBits)
	}
	remember := func(from, to int) {
		for j := from; j < to && j+4 <= len(raw); j++ {
			last[hash(j)] = int32(j + 1)
		}
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == packRef {
			dst = append(dst, packRef, packLiteral)
			remember(i, i+1)
			i++
			continue
		}
		if n, ok := phraseAt(raw[i:]); ok {
			dst = append(dst, packRef, n)
			end := i + len(packPhrases[n])
			remember(i, end)
			i = end
			continue
		}
		if i+copyMin <= len(raw) {
			if at := int(last[hash(i)]) - 1; at >= 0 && i-at <= copyReach {
				n := 0
				for n < copyMax && i+n < len(raw) && raw[at+n] == raw[i+n] {
					n++
				}
				if n >= copyMin {
					back := i - at
					dst = append(dst, packRef, byte(packCopy+n-4), byte(back>>8), byte(back))
					remember(i, i+n)
					i += n
					continue
				}
			}
		}
		dst = append(dst, c)
		remember(i, i+1)
		i++
	}
	return dst
}

// phraseAt reports the longest phrase that s starts with.
func phraseAt(s []byte) (uint8, bool) {
	for _, n := range phrasesByFirst[s[0]] {
		if bytes.HasPrefix(s, []byte(packPhrases[n])) {
			return n, true
		}
	}
	return 0, false
}

// AppendTo appends the message's JSON text to dst.
func (p Packed) AppendTo(dst []byte) []byte { return p.appendUpTo(dst, -1) }

// appendUpTo is AppendTo that stops once limit bytes were appended (or
// at the end; a negative limit never stops): the message's first bytes.
func (p Packed) appendUpTo(dst []byte, limit int) []byte {
	start := len(dst)
	for rest := p; len(rest) > 0; {
		if limit >= 0 && len(dst)-start >= limit {
			return dst
		}
		j := bytes.IndexByte(rest, packRef)
		if j < 0 || j+1 >= len(rest) {
			return append(dst, rest...)
		}
		dst = append(dst, rest[:j]...)
		t := rest[j+1]
		switch {
		case int(t) < len(packPhrases):
			dst = append(dst, packPhrases[t]...)
			rest = rest[j+2:]
		case t == packLiteral:
			dst = append(dst, packRef)
			rest = rest[j+2:]
		case t >= packCopy && j+3 < len(rest):
			n, back := int(t)-packCopy+4, int(rest[j+2])<<8|int(rest[j+3])
			from := len(dst) - back
			if back == 0 || from < start {
				panic(fmt.Errorf("packed message: a reference %d bytes back at %d", back, len(dst)-start))
			}
			for k := range n { // the source may overlap what it makes
				dst = append(dst, dst[from+k])
			}
			rest = rest[j+4:]
		default:
			panic(fmt.Errorf("packed message: unknown reference %#x", t))
		}
	}
	return dst
}

// Unpack is the message's JSON text.
func (p Packed) Unpack() json.RawMessage { return p.AppendTo(make([]byte, 0, p.Len())) }

// Len is the length of the message's JSON text.
func (p Packed) Len() int {
	n := 0
	for rest := p; len(rest) > 0; {
		j := bytes.IndexByte(rest, packRef)
		if j < 0 || j+1 >= len(rest) {
			return n + len(rest)
		}
		n += j
		t := rest[j+1]
		switch {
		case int(t) < len(packPhrases):
			n += len(packPhrases[t])
			rest = rest[j+2:]
		case t == packLiteral:
			n++
			rest = rest[j+2:]
		default:
			n += int(t) - packCopy + 4
			rest = rest[min(j+4, len(rest)):]
		}
	}
	return n
}

// HasPrefix reports whether the message's JSON text starts with prefix.
func (p Packed) HasPrefix(prefix []byte) bool {
	var buf [128]byte
	return bytes.HasPrefix(p.appendUpTo(buf[:0], len(prefix)), prefix)
}

// MarshalJSON is the message's JSON text, so that a Packed encodes as the
// message it holds.
func (p Packed) MarshalJSON() ([]byte, error) { return p.Unpack(), nil }
