// Package boundary is the output boundary of
// docs/tools.md#the-output-boundary: every tool result, built-in or remote,
// is screened here before the model sees it. A result that breaks any rule is
// replaced whole; the reason goes to the log only.
//
// Depth is counted on containers. The top-level value is at level 1; a
// member of an object or an element of an array is one level deeper than
// its container; the document parsed from a JSON-looking string is one
// level deeper than that string. A result is too deep when any object or
// array sits at a level above MaxDepth, so eight nested arrays pass and
// nine fail, and a string at level 8 holding "{}" fails.
//
// Where the rules of docs/tools.md#the-output-boundary leave room, the
// boundary takes the stricter of the plausible readings: object keys are screened for NUL, private key blocks and raw
// paths like any other string; case is compared by Unicode simple folding
// (so a Kelvin sign matches "k"); every Unicode space in a key counts as a
// space; "file://" matches in any case; a result that is not valid JSON or
// not valid UTF-8 is rejected.
package boundary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of docs/tools.md#the-output-boundary.
const (
	// MaxBytes is the largest accepted serialized result.
	MaxBytes = 64 << 10
	// MaxDepth is the deepest level an object or array may sit at.
	MaxDepth = 8
)

// Reasons a result is rejected. Check wraps one of them with context that
// never quotes the offending value.
var (
	ErrTooLarge     = errors.New("result too large")
	ErrTooDeep      = errors.New("result nested too deeply")
	ErrMalformed    = errors.New("result is not valid JSON")
	ErrForbiddenKey = errors.New("forbidden key")
	ErrNUL          = errors.New("string contains NUL")
	ErrPrivateKey   = errors.New("string contains a private key block")
	ErrLocalPath    = errors.New("string contains a raw local path")
)

// forbiddenWords are the key names (and key suffixes after "_") that are
// never shown to the model.
var forbiddenWords = []string{
	"secret", "password", "passwd", "token", "access_token", "refresh_token",
	"api_key", "authorization", "cookie", "private_key", "privatekey",
	"credential_path", "secret_path", "key_path",
}

// foldedForbiddenWords are forbiddenWords in folded form (see fold).
var foldedForbiddenWords = foldAll(forbiddenWords)

// forbiddenSuffixes are "_" + each folded forbidden word.
var forbiddenSuffixes = func() []string {
	out := make([]string, len(foldedForbiddenWords))
	for i, w := range foldedForbiddenWords {
		out[i] = "_" + w
	}
	return out
}()

// pemMarkers are the private key headers, matched without regard to case.
var pemMarkers = []string{
	"-----BEGIN PRIVATE KEY-----",
	"-----BEGIN OPENSSH PRIVATE KEY-----",
}

// foldedPEMMarkers are pemMarkers in folded form (see fold).
var foldedPEMMarkers = foldAll(pemMarkers)

func foldAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = fold(w)
	}
	return out
}

// Check reports whether result may be shown to the model: nil means
// accepted; an error carries the reason, for the log only. An empty result
// is the absent content (JSON null) and is accepted.
func Check(result json.RawMessage) error {
	if len(result) > MaxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(result), MaxBytes)
	}
	if len(bytes.TrimSpace(result)) == 0 {
		return nil
	}
	if !utf8.Valid(result) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	return checkDocument(result, 1)
}

// checkDocument checks one JSON document whose top-level value sits at
// level base. The document is validated first, so the walk below can
// trust its structure.
func checkDocument(data []byte, base int) error {
	if !json.Valid(data) {
		return ErrMalformed
	}
	w := walker{data: data}
	return w.value(base)
}

// walker steps through a valid JSON document byte by byte.
type walker struct {
	data []byte
	pos  int
}

func (w *walker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value checks the value at the current position, which sits at level.
func (w *walker) value(level int) error {
	w.skipSpace()
	switch w.data[w.pos] {
	case '{', '[':
		if level > MaxDepth {
			return fmt.Errorf("%w: a container at level %d, limit %d", ErrTooDeep, level, MaxDepth)
		}
		object := w.data[w.pos] == '{'
		w.pos++
		for {
			w.skipSpace()
			if c := w.data[w.pos]; c == '}' || c == ']' {
				w.pos++
				return nil
			}
			if c := w.data[w.pos]; c == ',' {
				w.pos++
				w.skipSpace()
			}
			if object {
				key, err := w.str()
				if err != nil {
					return err
				}
				if err := checkKey(key); err != nil {
					return err
				}
				w.skipSpace()
				w.pos++ // ':'
			}
			if err := w.value(level + 1); err != nil {
				return err
			}
		}
	case '"':
		s, err := w.str()
		if err != nil {
			return err
		}
		return checkText(s, level)
	default:
		// A number, true, false or null: nothing to screen.
		for w.pos < len(w.data) {
			switch w.data[w.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			w.pos++
		}
		return nil
	}
}

// str decodes the string literal at the current position.
func (w *walker) str() (string, error) {
	start := w.pos
	escaped := false
	i := start + 1
	for ; w.data[i] != '"'; i++ {
		if w.data[i] == '\\' {
			escaped = true
			i++
		}
	}
	w.pos = i + 1
	if !escaped {
		return string(w.data[start+1 : i]), nil
	}
	var s string
	if err := json.Unmarshal(w.data[start:w.pos], &s); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return s, nil
}

// checkKey applies the forbidden-key rule and the string rules to an
// object key.
func checkKey(key string) error {
	if i := forbiddenWord(key); i >= 0 {
		return fmt.Errorf("%w: a key ending in %q", ErrForbiddenKey, forbiddenWords[i])
	}
	return checkString(key)
}

// ForbiddenKey reports whether name breaks the forbidden-key rule of the
// boundary (docs/tools.md#the-output-boundary): once case-folded, with
// "-" and spaces turned into "_", it is one of the forbidden words
// (secret, token, api_key, …) or ends with "_" and one of them.
func ForbiddenKey(name string) bool { return forbiddenWord(name) >= 0 }

// forbiddenWord is the index in forbiddenWords of the word key breaks
// the forbidden-key rule with, or -1.
func forbiddenWord(key string) int {
	norm := normalizeKey(key)
	for i, fw := range foldedForbiddenWords {
		if norm == fw || strings.HasSuffix(norm, forbiddenSuffixes[i]) {
			return i
		}
	}
	return -1
}

// normalizeKey folds key and turns "-" and spaces into "_".
func normalizeKey(key string) string {
	ascii := true
	for i := 0; i < len(key) && ascii; i++ {
		ascii = key[i] < utf8.RuneSelf
	}
	if !ascii {
		return strings.Map(func(r rune) rune {
			if r == '-' || unicode.IsSpace(r) {
				return '_'
			}
			return r
		}, fold(key))
	}
	// For ASCII, the fold of a letter is its upper case.
	b := []byte(key)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-' || c == ' ' || ('\t' <= c && c <= '\r'):
			b[i] = '_'
		}
	}
	return string(b)
}

// checkText applies the string rules to a string value at the given level
// and, when it looks like JSON, checks the document inside one level
// deeper.
func checkText(s string, level int) error {
	if err := checkString(s); err != nil {
		return err
	}
	trimmed := strings.TrimSpace(s)
	if trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') {
		// Stage 2: text that merely starts with a bracket ("[FILE] a.txt")
		// is plain text, already screened above; only a document that
		// parses is checked as one.
		if !json.Valid([]byte(trimmed)) {
			return nil
		}
		if err := checkDocument([]byte(trimmed), level+1); err != nil {
			return fmt.Errorf("embedded JSON at level %d: %w", level, err)
		}
	}
	return nil
}

// checkString applies the NUL, private key and raw path rules.
func checkString(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return ErrNUL
	}
	if strings.Contains(s, "-----") {
		f := fold(s)
		for _, m := range foldedPEMMarkers {
			if strings.Contains(f, m) {
				return ErrPrivateKey
			}
		}
	}
	if strings.ContainsRune(s, '/') {
		for tok := range strings.FieldsSeq(s) {
			tok = strings.Trim(tok, ",;:()[]'\"")
			if strings.HasPrefix(tok, "/") || hasPrefixFold(tok, "file://") {
				return ErrLocalPath
			}
		}
	}
	return nil
}

// fold maps every rune to the smallest rune of its Unicode simple-folding
// orbit, so two strings are equal under fold exactly when strings.EqualFold
// would call them equal rune by rune.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		return min
	}, s)
}

// hasPrefixFold reports whether s starts with prefix under fold.
func hasPrefixFold(s, prefix string) bool {
	if s == "" || s[0] == '/' {
		return false
	}
	return strings.HasPrefix(fold(s), fold(prefix))
}
