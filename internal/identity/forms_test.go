package identity

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForms(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string // among the forms
	}{
		{"plain", "sk-1", []string{"sk-1"}},
		{"slash", "a/b", []string{"a/b", `a\/b`}},
		{"html", "a&<>", []string{"a&<>", `a\u0026\u003c\u003e`, `a\u0026\u003C\u003E`}},
		{"quote and backslash", `a"\`, []string{`a\"\\`}},
		{"control", "a\tb\x01", []string{`a\tb\u0001`}},
		{"non-ASCII", "é😀", []string{"é😀", `\u00e9\ud83d\ude00`, `\u00E9\uD83D\uDE00`}},
		{"percent", "a b/c&d", []string{"a+b%2Fc%26d", "a+b%2fc%26d", "a%20b%2Fc&d", "a%20b%2fc&d"}},
		{"base64", "sk?>>", []string{"c2s/Pj4=", "c2s/Pj4", "c2s_Pj4=", "c2s_Pj4", `c2s\/Pj4=`}},
		{"nested JSON", `a/"b`, []string{`a\\\/\\\"b`, `a\\/\\\"b`, `a/\\\"b`}},
		{"bearer", "Bearer tok-9f3a2c7e", []string{"Bearer tok-9f3a2c7e", "tok-9f3a2c7e", "dG9rLTlmM2EyYzdl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var forms []string
			for _, f := range Forms([]byte(tt.value)) {
				forms = append(forms, string(f))
			}
			require.NotEmpty(t, forms)
			assert.Equal(t, tt.value, forms[0], "the value comes first")
			for _, w := range tt.want {
				assert.Contains(t, forms, w)
			}
			seen := map[string]bool{}
			for _, f := range forms {
				assert.False(t, seen[f], "distinct: %q", f)
				seen[f] = true
				values := secretValues(tt.value)
				cred := values[len(values)-1]
				assert.True(t, decodesTo(f, tt.value) || decodesTo(f, cred), "%q decodes to the value or its credential", f)
			}
		})
	}
	assert.Empty(t, Forms(nil))
}

// decodesTo reports whether f is value after at most two JSON string
// decodings and then, perhaps, one percent or base64 decoding.
func decodesTo(f, value string) bool {
	texts := []string{f}
	for range 2 {
		var s string
		if json.Unmarshal([]byte(`"`+texts[len(texts)-1]+`"`), &s) != nil {
			break
		}
		texts = append(texts, s)
	}
	for _, t := range texts {
		if t == value {
			return true
		}
		if v, err := url.QueryUnescape(t); err == nil && v == value {
			return true
		}
		if v, err := url.PathUnescape(t); err == nil && v == value {
			return true
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if v, err := enc.DecodeString(t); err == nil && string(v) == value {
				return true
			}
		}
	}
	return false
}

func TestFormsOfAnAuthSchemeValue(t *testing.T) {
	tests := []struct {
		value, credential string
	}{
		{"Bearer tok-9f3a2c7e", "tok-9f3a2c7e"},
		{"Basic  dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="},
		{"token ghp_0123456789", "ghp_0123456789"},
		{"Bearer short", ""},          // too short to be a secret alone
		{"a passphrase of words", ""}, // not one credential
		{"sk-plain-key-value", ""},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			values := secretValues(tt.value)
			if tt.credential == "" {
				assert.Equal(t, []string{tt.value}, values)
			} else {
				assert.Equal(t, []string{tt.value, tt.credential}, values)
				var forms []string
				for _, f := range Forms([]byte(tt.value)) {
					forms = append(forms, string(f))
				}
				assert.Contains(t, forms, tt.credential)
			}
		})
	}
}
