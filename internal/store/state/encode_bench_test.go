package state

import (
	"fmt"
	"testing"

	"github.com/wisent/singularity/internal/wire/chat"
)

// BenchmarkEncodeFullMind is the checkpoint of a being at the memory cap
// (1000 short memories) with a full 200-message window: what every cycle
// end of a long life encodes.
func BenchmarkEncodeFullMind(b *testing.B) {
	st := &Being{SchemaVersion: SchemaVersion, Budget: Budget{Starting: mustParse("10"), Remaining: mustParse("9.5")}}
	at := Now()
	for i := range MaxMemories {
		st.Mind.Memories = append(st.Mind.Memories, Memory{ID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), Kind: "lead", Text: fmt.Sprint("lead number ", i), CreatedAt: at})
	}
	for i := range 200 {
		st.Conversation = append(st.Conversation, chat.Message{Role: chat.RoleUser, Content: fmt.Sprint("message number ", i, " of the window")})
	}
	b.ReportAllocs()
	for b.Loop() {
		data, err := Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkEncodeFullMindCached is the same checkpoint through an
// EncodeCache that has seen the memories before (one new memory per
// checkpoint, as in a long life).
func BenchmarkEncodeFullMindCached(b *testing.B) {
	st := fullMind()
	var c EncodeCache
	if _, err := c.Encode(st); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		st.Apply(MemoryAdded(Memory{ID: fmt.Sprint("new-", i), Kind: "lead", Text: "one more", CreatedAt: Now()}))
		data, err := c.Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkEncodeFullMindCold is the first checkpoint of a full mind
// through a new EncodeCache: what every being's boot checkpoint costs
// after a restart or a takeover, when no memory is cached yet.
func BenchmarkEncodeFullMindCold(b *testing.B) {
	st := fullMind()
	b.ReportAllocs()
	for b.Loop() {
		var c EncodeCache
		data, err := c.Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkDecodeFullMind is loading the checkpoint of a full mind: what
// every being's recovery decodes after a restart or a takeover.
func BenchmarkDecodeFullMind(b *testing.B) {
	data, err := Encode(fullMind())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode("state.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

func fullMind() *Being {
	st := &Being{SchemaVersion: SchemaVersion, Budget: Budget{Starting: mustParse("10"), Remaining: mustParse("9.5")}}
	at := Now()
	for i := range MaxMemories {
		st.Mind.Memories = append(st.Mind.Memories, Memory{ID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), Kind: "lead", Text: fmt.Sprint("lead number ", i), CreatedAt: at})
	}
	for i := range 200 {
		st.Conversation = append(st.Conversation, chat.Message{Role: chat.RoleUser, Content: fmt.Sprint("message number ", i, " of the window")})
	}
	return st
}
