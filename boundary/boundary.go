// Package boundary is the output boundary of SPEC §13: every tool result,
// built-in or remote, is screened here before the model sees it. A result
// that breaks any rule is replaced whole; the reason goes to the log only.
//
// Depth is counted on containers. The top-level value is at level 1; a
// member of an object or an element of an array is one level deeper than
// its container; the document parsed from a JSON-looking string is one
// level deeper than that string. A result is too deep when any object or
// array sits at a level above MaxDepth, so eight nested arrays pass and
// nine fail, and a string at level 8 holding "{}" fails.
//
// Where the spec is silent the boundary is the stricter of the plausible
// readings: object keys are screened for NUL, private key blocks and raw
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
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/wisent/singularity/outcome"
)

// Limits of SPEC §13.
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

// Apply screens o's content and Most ids. An accepted outcome is returned
// unchanged with an empty reason; a rejected one is replaced by
// outcome.Rejection() and the reason is returned for the log.
func Apply(o outcome.Outcome) (outcome.Outcome, string) {
	if o.Rejected {
		return o, ""
	}
	err := Check(o.Content)
	for _, id := range []string{o.ChatID, o.MessageID} {
		if err == nil {
			err = checkText(id, 1)
		}
	}
	if err != nil {
		return outcome.Rejection(), err.Error()
	}
	return o, ""
}

// frame is one open container during the walk.
type frame struct {
	object    bool
	expectKey bool
}

// checkDocument walks one JSON document whose top-level value sits at
// level base.
func checkDocument(data []byte, base int) error {
	if !json.Valid(data) {
		return ErrMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		// The level of a value read now: one below the innermost container.
		level := base + len(stack)
		isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expectKey
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if level > MaxDepth {
					return fmt.Errorf("%w: a container at level %d, limit %d", ErrTooDeep, level, MaxDepth)
				}
				stack = append(stack, frame{object: t == '{', expectKey: t == '{'})
				continue
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
			}
		case string:
			if isKey {
				if err := checkKey(t); err != nil {
					return err
				}
				stack[len(stack)-1].expectKey = false
				continue
			}
			if err := checkText(t, level); err != nil {
				return err
			}
		}
		// A whole value ended: the enclosing object now expects a key.
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
}

// checkKey applies the forbidden-key rule and the string rules to an
// object key.
func checkKey(key string) error {
	norm := strings.Map(func(r rune) rune {
		if r == '-' || unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, fold(key))
	for i, fw := range foldedForbiddenWords {
		if norm == fw || strings.HasSuffix(norm, "_"+fw) {
			return fmt.Errorf("%w: a key ending in %q", ErrForbiddenKey, forbiddenWords[i])
		}
	}
	return checkString(key)
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
		for _, tok := range strings.Fields(s) {
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
	return strings.HasPrefix(fold(s), fold(prefix))
}
