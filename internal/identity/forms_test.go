package identity

import (
	"encoding/json"
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
			for i, f := range forms {
				assert.False(t, seen[f], "distinct: %q", f)
				seen[f] = true
				if i == 0 {
					continue // the value as is need not be a JSON string body
				}
				var decoded string
				require.NoError(t, json.Unmarshal([]byte(`"`+f+`"`), &decoded), "%q is a JSON string body", f)
				assert.Equal(t, tt.value, decoded, "%q decodes to the value", f)
			}
		})
	}
	assert.Empty(t, Forms(nil))
}
