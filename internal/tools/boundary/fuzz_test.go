package boundary

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/wisent/singularity/internal/tools/outcome"
)

// FuzzCheck asserts that whatever Check accepts is clean by an independent
// reading of docs/tools.md#the-output-boundary (a decoded tree, lower-casing
// and EqualFold instead of the package's token walk and folding), and that
// Check and Apply never panic.
func FuzzCheck(f *testing.F) {
	for _, tc := range checkCases {
		// The 64 KiB size cases are left to TestCheck: as seeds they make
		// every mutation and minimization slow.
		if len(tc.result) < 4096 {
			f.Add([]byte(tc.result))
		}
	}
	for _, s := range []string{
		`{"memories":[{"id":"1","kind":"lead","text":"x"}]}`,
		`{"path":"a/b.txt","content":"hello"}`,
		`{"nested":"{\"inner\":\"[1,{\\\"x\\\":2}]\"}"}`,
		`["file://x"," /y ","'/z'"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(json.RawMessage(data))
		// Apply must never panic and must agree with Check.
		got, reason := Screen{}.Apply(outcome.Succeeded(json.RawMessage(data)))
		if (err == nil) != (reason == "") {
			t.Fatalf("Apply and Check disagree: %v vs %q", err, reason)
		}
		if err != nil {
			if got.Envelope() != outcome.Rejection(outcome.Success).Envelope() {
				t.Fatalf("rejected envelope %q", got.Envelope())
			}
			return
		}
		if len(data) > MaxBytes {
			t.Fatalf("accepted %d bytes", len(data))
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		if bytes.IndexByte(data, 0) >= 0 {
			t.Fatal("accepted a raw NUL byte")
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted malformed JSON: %v", err)
		}
		if problem := oracle(v, 1); problem != "" {
			t.Fatalf("accepted %q: %s", data, problem)
		}
	})
}

// oracle reports what is wrong with the decoded value v at level, or "".
func oracle(v any, level int) string {
	switch t := v.(type) {
	case map[string]any:
		if level > MaxDepth {
			return "object too deep"
		}
		for k, e := range t {
			if oracleKey(k) {
				return "forbidden key"
			}
			if p := oracleString(k, level+1, false); p != "" {
				return "key: " + p
			}
			if p := oracle(e, level+1); p != "" {
				return p
			}
		}
	case []any:
		if level > MaxDepth {
			return "array too deep"
		}
		for _, e := range t {
			if p := oracle(e, level+1); p != "" {
				return p
			}
		}
	case string:
		return oracleString(t, level, true)
	}
	return ""
}

func oracleKey(k string) bool {
	n := strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(k))
	for _, w := range []string{"secret", "password", "passwd", "token", "access_token", "refresh_token",
		"api_key", "authorization", "cookie", "private_key", "privatekey", "credential_path",
		"secret_path", "key_path"} {
		if n == w || strings.HasSuffix(n, "_"+w) {
			return true
		}
	}
	return false
}

func oracleString(s string, level int, embedded bool) string {
	if strings.ContainsRune(s, 0) {
		return "NUL"
	}
	runes := []rune(s)
	for _, marker := range []string{"-----BEGIN PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----"} {
		n := len([]rune(marker))
		for i := 0; i+n <= len(runes); i++ {
			if runes[i] == '-' && strings.EqualFold(string(runes[i:i+n]), marker) {
				return "private key"
			}
		}
	}
	for _, tok := range strings.FieldsFunc(s, unicode.IsSpace) {
		tok = strings.TrimFunc(tok, func(r rune) bool { return strings.ContainsRune(",;:()[]'\"", r) })
		if strings.HasPrefix(tok, "/") || (len(tok) >= 7 && strings.EqualFold(tok[:7], "file://")) {
			return "raw path"
		}
	}
	if !embedded {
		return ""
	}
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		var inner any
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.UseNumber()
		// Stage 2: text that does not parse as one JSON document is
		// plain text, screened by the string rules above.
		if err := dec.Decode(&inner); err != nil {
			return ""
		}
		if strings.TrimSpace(trimmed[dec.InputOffset():]) != "" {
			return ""
		}
		return oracle(inner, level+1)
	}
	return ""
}
