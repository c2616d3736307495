package state

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EncodeCache makes the repeated checkpoints of one being cheaper: a
// memory never changes once made, so its pretty JSON is kept between
// checkpoints and only new memories are encoded. Its output is exactly
// Encode's. It is not safe for concurrent use; a being owns one.
type EncodeCache struct {
	memories map[string]*cachedMemory
	gen      uint64 // counts Encode calls: an entry not used by the last is dropped
	size     int    // the length of the last output, the next one's estimate
}

type cachedMemory struct {
	m    Memory
	json []byte // the memory as Encode indents it inside mind.memories
	gen  uint64 // the last Encode that used it
}

// The memories array sits in mind, one level below the top: its key at
// four spaces, its elements at six.
const (
	memoriesKey    = "\n    \"memories\": []"
	memoryIndent   = "      "
	memoriesOpen   = "\n    \"memories\": [\n"
	memoriesClose  = "\n    ]"
	memoriesJoiner = ",\n"
)

// Encode renders b like Encode, reusing the memories encoded before.
func (c *EncodeCache) Encode(b *Being) ([]byte, error) {
	if len(b.Mind.Memories) == 0 {
		c.memories = nil
		return Encode(b)
	}
	rest := *b
	rest.Mind.Memories = nil
	out, err := Encode(&rest)
	if err != nil {
		return nil, err
	}
	at := bytes.Index(out, []byte(memoriesKey))
	if at < 0 {
		return nil, fmt.Errorf("encode: the memories key is missing")
	}
	if c.memories == nil {
		c.memories = map[string]*cachedMemory{}
	}
	c.gen++
	buf := bytes.NewBuffer(make([]byte, 0, max(c.size+c.size/8, len(out)+160*len(b.Mind.Memories))))
	buf.Write(out[:at])
	buf.WriteString(memoriesOpen)
	for i, m := range b.Mind.Memories {
		if i > 0 {
			buf.WriteString(memoriesJoiner)
		}
		cached, ok := c.memories[m.ID]
		if !ok || cached.m != m {
			pretty := make([]byte, 0, len(memoryIndent)+memoryFrame+len(m.ID)+len(m.Kind)+len(m.Text))
			cached = &cachedMemory{m: m, json: appendMemoryJSON(append(pretty, memoryIndent...), m)}
			c.memories[m.ID] = cached
		}
		cached.gen = c.gen
		buf.Write(cached.json)
	}
	buf.WriteString(memoriesClose)
	buf.Write(out[at+len(memoriesKey):])
	if len(c.memories) > len(b.Mind.Memories) {
		for id, cached := range c.memories {
			if cached.gen != c.gen {
				delete(c.memories, id)
			}
		}
	}
	c.size = buf.Len()
	return buf.Bytes(), nil
}

// The fields of a memory, each on a line of its own one indent deeper
// than the memory, and what appendMemoryJSON writes besides the values.
const (
	memoryField = ",\n" + memoryIndent + "  "
	memoryOpen  = "{\n" + memoryIndent + "  " + `"id": `
	memoryKind  = memoryField + `"kind": `
	memoryText  = memoryField + `"text": `
	memoryAt    = memoryField + `"created_at": `
	memoryEnd   = "\n" + memoryIndent + "}"
	memoryFrame = len(memoryOpen+memoryKind+memoryText+memoryAt+memoryEnd) + len(TimeLayout) + 8
)

// appendMemoryJSON appends m as json.MarshalIndent(m, memoryIndent, "  ")
// writes it, without encoding/json's reflection and its scanner's pass
// over every byte: a boot checkpoint, after a restart or a takeover,
// encodes every memory of a full mind at once. TestMemoryJSON and
// FuzzMemoryJSON hold it to json.MarshalIndent.
func appendMemoryJSON(dst []byte, m Memory) []byte {
	dst = append(dst, memoryOpen...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, memoryKind...)
	dst = appendJSONString(dst, m.Kind)
	dst = append(dst, memoryText...)
	dst = appendJSONString(dst, m.Text)
	dst = append(dst, memoryAt...)
	dst = m.CreatedAt.appendJSON(dst)
	return append(dst, memoryEnd...)
}

// appendJSONString appends s quoted as encoding/json quotes it: as it is
// when every byte is printable ASCII that encoding/json leaves alone, and
// through json.Marshal itself otherwise (escapes, HTML's <, > and &,
// control bytes, anything beyond ASCII).
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
