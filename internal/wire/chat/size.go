package chat

import (
	"strings"
	"unicode/utf8"
)

// messageOverhead bounds what one message adds to a request body besides
// its strings: the keys of every field it may carry, quotes, colons,
// commas and braces (measured at 66 bytes for a message with every field
// set, see TestSizeBound), with room to spare for a gateway that writes
// them differently.
const messageOverhead = 96

// callOverhead bounds the same for one tool call inside a message.
const callOverhead = 80

// SizeBound is an upper bound of the bytes msgs take in a request body
// (docs/money.md#no-overdraft): each string's exact JSON length, escapes
// included, plus a fixed allowance per message and per tool call. It
// allocates nothing, so a being can bound every request cheaply.
func SizeBound(msgs []Message) int {
	n := 2 // the brackets
	for i := range msgs {
		m := &msgs[i]
		n += messageOverhead + QuotedLen(m.Role) + QuotedLen(m.Content) + QuotedLen(m.ToolCallID) + QuotedLen(m.Name)
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			n += callOverhead + QuotedLen(c.ID) + QuotedLen(c.Type) + QuotedLen(c.Function.Name) + QuotedLen(c.Function.Arguments)
		}
	}
	return n
}

// QuotedLen is the length of s as encoding/json writes it as a string:
// the quotes, two bytes for \" \\ \n \r \t \b \f, six for the other
// control characters, for <, > and & (HTML-escaped) and for U+2028 and
// U+2029, and six for each invalid UTF-8 byte (written as \ufffd).
func QuotedLen(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		n += int(escapeExtra[s[i]])
	}
	if utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029") {
		return n
	}
	return quotedLenSlow(s)
}

// escapeExtra is what each byte adds beyond itself when quoted; bytes
// from 0x80 up count as themselves (valid UTF-8 is copied).
var escapeExtra = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t', '\b', '\f'} {
		t[c] = 1
	}
	for _, c := range []byte{'<', '>', '&'} {
		t[c] = 5
	}
	return t
}()

// quotedLenSlow is QuotedLen for text with invalid UTF-8 or line and
// paragraph separators.
func quotedLenSlow(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += 1 + int(escapeExtra[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
