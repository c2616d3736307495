package state

import (
	"encoding/json"
	"fmt"
	"testing"

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
