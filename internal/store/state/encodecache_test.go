package state

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeCacheMatchesEncode: the cache's output is Encode's, byte
// for byte, as memories come and go (and with an extra field that also
// holds a "memories" key), and it forgets memories that left the mind.
func TestEncodeCacheMatchesEncode(t *testing.T) {
	st := fullMind()
	st.Extra = map[string]json.RawMessage{"zz_extra": json.RawMessage(`{"memories":[]}`)}
	var c EncodeCache
	check := func() {
		t.Helper()
		want, err := Encode(st)
		require.NoError(t, err)
		got, err := c.Encode(st)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		require.LessOrEqual(t, len(c.memories), len(st.Mind.Memories))
	}
	check()
	for i := range 30 {
		st.Apply(MemoryAdded(Memory{ID: fmt.Sprint("new-", i), Kind: "k\"quoted\"", Text: "text\nwith <html> & ünicode", CreatedAt: Now()}))
		check()
	}
	// A memory edited in place under the same id is encoded again.
	st.Mind.Memories[0].Text = "edited"
	check()
	st.Mind.Memories = st.Mind.Memories[:1]
	check()
	st.Mind.Memories = nil
	check()
}

// TestMemoryJSON holds the cache's encoder of a memory to
// json.MarshalIndent, for plain text and for every kind of byte
// encoding/json escapes or replaces.
func TestMemoryJSON(t *testing.T) {
	at := Time{time.Date(2026, 12, 7, 3, 4, 5, 123_456_789, time.FixedZone("x", 3600))}
	for _, text := range []string{
		"", "plain text, 100% ASCII: {[()]}~",
		`a "quote" and a \ backslash`, "<b>bold</b> & more",
		"tab\tnewline\ncarriage\rback\bform\fbell\x07del\x7f",
		"ünicode ✓ 😀", "line\u2028para\u2029", "bad \xff\xfe utf-8",
	} {
		m := Memory{ID: "id-" + text, Kind: text, Text: text, CreatedAt: at}
		want, err := json.MarshalIndent(m, memoryIndent, "  ")
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendMemoryJSON(nil, m)), "%q", text)
	}
}

// FuzzMemoryJSON holds the cache's encoder of a memory to
// json.MarshalIndent on any strings.
func FuzzMemoryJSON(f *testing.F) {
	f.Add("0000-id", "lead", "Cycle 3: Ada surveyed 7 tools & planned <next>.", int64(1796610807170000000))
	f.Add("", "", "\x00\xff\u2028\"\\", int64(0))
	f.Fuzz(func(t *testing.T, id, kind, text string, nanos int64) {
		m := Memory{ID: id, Kind: kind, Text: text, CreatedAt: Time{time.Unix(0, nanos)}}
		want, err := json.MarshalIndent(m, memoryIndent, "  ")
		if err != nil {
			return // an instant beyond what the layout writes
		}
		if got := appendMemoryJSON(nil, m); string(got) != string(want) {
			t.Fatalf("appendMemoryJSON wrote\n%s\njson.MarshalIndent\n%s", got, want)
		}
	})
}
