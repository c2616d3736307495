package state

import "bytes"

// indentCompact appends src, compact JSON as encoding/json writes it
// (valid, no insignificant whitespace), to dst indented as json.Indent
// with no prefix and an indent of two spaces writes it: a newline and the
// nesting's indent before every element, ": " after a key, empty objects
// and arrays kept as {} and []. It does not validate; state.json's own
// encoding is its only input, and TestIndentCompactMatchesIndent holds it
// to json.Indent. It runs several times faster than json.Indent, which
// steps its scanner through every byte: a checkpoint of a full mind is
// mostly this pass.
func indentCompact(dst, src []byte) []byte {
	depth := 0
	opened := false // after { or [: the newline waits to see whether it is empty
	for i := 0; i < len(src); {
		c := src[i]
		if opened {
			opened = false
			if c == '}' || c == ']' {
				dst = append(dst, c)
				i++
				continue
			}
			depth++
			dst = newlineIndent(dst, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end
			continue
		case '{', '[':
			dst = append(dst, c)
			opened = true
		case ',':
			dst = append(dst, ',')
			dst = newlineIndent(dst, depth)
		case ':':
			dst = append(dst, ':', ' ')
		case '}', ']':
			depth--
			dst = newlineIndent(dst, depth)
			dst = append(dst, c)
		default:
			// A number or a literal: copy the run up to the next
			// structural byte.
			j := i + 1
			for j < len(src) && !structural(src[j]) {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		i++
	}
	return dst
}

// stringEnd is the index just past the JSON string starting at src[i].
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); {
		k := bytes.IndexAny(src[j:], `"\`)
		if k < 0 {
			return len(src)
		}
		j += k
		if src[j] == '\\' {
			j += 2
			continue
		}
		return j + 1
	}
	return len(src)
}

// structural reports whether c ends a number or a literal.
func structural(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

func newlineIndent(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}
