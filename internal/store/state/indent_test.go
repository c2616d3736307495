package state

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndentCompactMatchesIndent holds state.json's indenter to
// json.Indent: for the compact encoding of the reference fixture, of
// full minds and of values that nest, escape and leave things empty, the
// bytes are the same.
func TestIndentCompactMatchesIndent(t *testing.T) {
	var fixture Being
	require.NoError(t, json.Unmarshal(readFixture(t), &fixture))
	fixtureCompact, err := fixture.MarshalJSON()
	require.NoError(t, err)
	full, err := fullMind().MarshalJSON()
	require.NoError(t, err)
	docs := [][]byte{
		fixtureCompact, full,
		[]byte(`{}`), []byte(`[]`), []byte(`{"a":[]}`), []byte(`{"a":{},"b":[{}],"c":[[],[1,2]]}`),
		[]byte(`{"s":"a,b:{c}[d]\"e\\f","n":-1.5e-7,"t":true,"f":false,"z":null}`),
		[]byte(`[1,"x",{"k":"v"},[null]]`), []byte(`"just a string"`), []byte(`12`),
	}
	for _, doc := range docs {
		var want bytes.Buffer
		require.NoError(t, json.Indent(&want, doc, "", "  "))
		assert.Equal(t, want.String(), string(indentCompact(nil, doc)), "%.80s", doc)
	}
}

// FuzzIndentCompact holds state.json's indenter to json.Indent on any
// compact JSON.
func FuzzIndentCompact(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c\"d"}],"e":{}}`))
	f.Add(readFixture(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return
		}
		var want bytes.Buffer
		require.NoError(t, json.Indent(&want, compact.Bytes(), "", "  "))
		require.Equal(t, want.String(), string(indentCompact(nil, compact.Bytes())))
	})
}
