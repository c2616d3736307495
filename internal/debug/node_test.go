package debug

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTextValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"running", "running"},
		{"finance__finance_propose", "finance__finance_propose"},
		{"9.75", "9.75"},
		{"", `""`},
		{"exit status 1", `"exit status 1"`},
		{`say "hi"`, `"say \"hi\""`},
		{"a=b", `"a=b"`},
		{`back\slash`, `"back\\slash"`},
		{"tab\there", `"tab\there"`},
		{"new\nline", `"new\nline"`},
		{"Zoë", "Zoë"},
		{"bell\a", `"bell\a"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, textValue(tt.in), "%q", tt.in)
	}
}

func TestWriteText(t *testing.T) {
	tree := Node{PID: "family", Kind: "family", Name: `the "family"`, Status: "running",
		Figures: map[string]any{
			"empty":  map[string]any{},
			"list":   []any{"a", json.Number("1")},
			"flag":   true,
			"none":   nil,
			"errors": map[string]any{"b": json.Number("2"), "a": map[string]any{"deep": "x y"}},
			"kind":   "ignored: reserved",
		},
		Children: []Node{
			{PID: "family/x", Status: StatusUnresponsive, Children: []Node{}},
			{PID: "family/y", Kind: "las", Name: "", Status: "", Children: []Node{
				{PID: "family/y/z", Kind: "ledger", Name: "ledger", Status: "running"},
			}},
		},
	}
	var b strings.Builder
	require.NoError(t, tree.WriteText(&b))
	assert.Equal(t, `family "the \"family\"" running empty={} errors.a.deep="x y" errors.b=2 flag=true list="[\"a\",1]" none=null
  ? "" unresponsive pid=family/x
  las "" ""
    ledger "ledger" running
`, b.String())
}

func TestMarshalJSONOrder(t *testing.T) {
	n := Node{PID: "p", Kind: "k", Name: "n", Status: "s",
		Figures: map[string]any{"z": json.Number("1"), "a": "x", "status": "shadow", "children": "shadow"}}
	raw, err := json.Marshal(n)
	require.NoError(t, err)
	assert.Equal(t, `{"pid":"p","kind":"k","name":"n","status":"s","a":"x","z":1,"children":[]}`, string(raw),
		"own keys first, figures sorted, reserved figure keys never shadow, nil children as []")
}
