package identity

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Forms returns the texts in which value may appear in what a peer sends
// back: value as is, and value as it is written inside a JSON string
// literal (without the quotes) by the encoders a gateway or server may
// use: encoding/json with and without HTML escaping, and escapers that
// also write "/" as `\/`, every non-ASCII character as a \u escape, or
// hex digits in upper case. The forms are distinct and value comes
// first; an empty value has no form.
//
// Text that has been decoded from JSON holds value as is, so redacting
// every form both before and after decoding leaves no copy of value.
func Forms(value []byte) [][]byte {
	if len(value) == 0 {
		return nil
	}
	v := string(value)
	out := [][]byte{append([]byte(nil), value...)}
	seen := map[string]bool{v: true}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, []byte(f))
		}
	}
	add(encodingJSON(v, true))
	add(encodingJSON(v, false))
	for mask := 0; mask < 1<<4; mask++ {
		add(escape(v, escapeOptions{
			html:     mask&1 != 0,
			slash:    mask&2 != 0,
			nonASCII: mask&4 != 0,
			upperHex: mask&8 != 0,
		}))
	}
	return out
}

// encodingJSON is v as encoding/json writes it inside a string literal.
func encodingJSON(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	out := bytes.TrimSpace(b.Bytes())
	return string(out[1 : len(out)-1])
}

// escapeOptions choose how escape writes a JSON string literal.
type escapeOptions struct {
	html     bool // '<', '>' and '&' as \u escapes
	slash    bool // '/' as `\/`
	nonASCII bool // every rune past U+007F as a \u escape (UTF-16)
	upperHex bool // \u escapes with upper-case hex digits
}

// escape is v inside a JSON string literal, without the quotes, as o
// says. Invalid UTF-8 is written as U+FFFD, as decoders read it.
func escape(v string, o escapeOptions) string {
	var b strings.Builder
	hex := "0123456789abcdef"
	if o.upperHex {
		hex = "0123456789ABCDEF"
	}
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[r>>shift&0xf])
		}
	}
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			u(r)
		case o.html && (r == '<' || r == '>' || r == '&'):
			u(r)
		case o.slash && r == '/':
			b.WriteString(`\/`)
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case o.nonASCII:
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				u(r1)
				u(r2)
			} else {
				u(r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
