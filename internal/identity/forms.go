package identity

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Forms returns the texts in which value may appear in what a peer sends
// back or a model writes, so that redacting every one of them leaves no
// copy of value in the forms covered (docs/configuration.md#secret-files):
//
//   - the whole value as is, percent-encoded (as query and as path
//     escaping, hex digits in upper or lower case), and in base64 and
//     base64url, padded or not;
//   - each of those as it is written inside a JSON string literal
//     (without the quotes) by the encoders a gateway or server may use:
//     encoding/json with and without HTML escaping, and escapers that
//     also write "/" as `\/`, every non-ASCII character as a \u escape,
//     or hex digits in upper case;
//   - each of those escaped once more, as JSON text inside a JSON string
//     holds it (a tool's arguments inside a journal line).
//
// When value is an auth-scheme value, "<scheme> <credential>" (Bearer,
// Basic, Token, …), the credential alone is a secret too, and its forms
// follow. Hex, reversed and split copies are not covered. The forms are
// distinct and value comes first; an empty value has no form.
//
// Text that has been decoded from JSON holds value as is, so redacting
// every form both before and after decoding leaves no copy of value.
func Forms(value []byte) [][]byte {
	if len(value) == 0 {
		return nil
	}
	var out [][]byte
	seen := map[string]bool{}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, []byte(f))
		}
	}
	for _, v := range secretValues(string(value)) {
		for _, whole := range wholeForms(v) {
			add(whole)
			for _, once := range jsonForms(whole) {
				add(once)
				for _, twice := range jsonForms(once) {
					add(twice)
				}
			}
		}
	}
	return out
}

// authScheme matches an auth-scheme value (RFC 9110 section 11): a
// scheme token, spaces, and one credential without spaces.
var authScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9!#$%&'*+.^_|~-]* +([^ ]+)$`)

// minCredential is the shortest credential of an auth-scheme value that
// is a secret by itself: shorter ones would match ordinary words.
const minCredential = 8

// secretValues is value, and the credential of an auth-scheme value.
func secretValues(value string) []string {
	out := []string{value}
	if m := authScheme.FindStringSubmatch(value); m != nil && len(m[1]) >= minCredential {
		out = append(out, m[1])
	}
	return out
}

// wholeForms is v as is, percent-encoded and in base64, each of the whole
// value.
func wholeForms(v string) []string {
	b := []byte(v)
	query, path := url.QueryEscape(v), url.PathEscape(v)
	return []string{
		v,
		query, lowerPercent(query),
		path, lowerPercent(path),
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	}
}

// lowerPercent is s with the hex digits of its %XX escapes in lower case.
func lowerPercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// jsonForms are v as the JSON encoders of Forms write it inside a string
// literal, without the quotes (v itself may be among them). An escape
// option that changes nothing in v (HTML escaping of a value without
// '<', '>' or '&', …) is not tried.
func jsonForms(v string) []string {
	out := []string{encodingJSON(v, true), encodingJSON(v, false)}
	html, slash := strings.ContainsAny(v, "<>&"), strings.Contains(v, "/")
	nonASCII, control := false, false
	for i := 0; i < len(v); i++ {
		nonASCII = nonASCII || v[i] >= utf8.RuneSelf
		control = control || v[i] < 0x20 && v[i] != '\n' && v[i] != '\r' && v[i] != '\t'
	}
	for mask := 0; mask < 1<<4; mask++ {
		o := escapeOptions{
			html:     mask&1 != 0,
			slash:    mask&2 != 0,
			nonASCII: mask&4 != 0,
			upperHex: mask&8 != 0,
		}
		if o.html && !html || o.slash && !slash || o.nonASCII && !nonASCII ||
			o.upperHex && !(control || o.html || o.nonASCII) {
			continue
		}
		out = append(out, escape(v, o))
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
