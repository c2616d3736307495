package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Encoded is a conversation held encoded
// (docs/family.md#families-of-thousands): one value per message, each
// exactly the JSON text encoding/json writes for a chat.Message (and so
// as state.json and a completion request carry it), held packed
// (Packed). A living being holds its conversation this way
// (Being.HoldEncoded), so that its heap holds two hundred packed byte
// strings rather than two hundred parsed messages, and a request or a
// checkpoint copies the bytes out (AppendJSON) instead of encoding them
// again. The values are never changed once made; slices of an Encoded
// may share them.
type Encoded []Packed

// EncodeMessage encodes one message as JSON text.
func EncodeMessage(m chat.Message) json.RawMessage {
	data, err := json.Marshal(m)
	if err != nil {
		// A chat.Message holds only strings: nothing can fail.
		panic(fmt.Errorf("encode chat message: %w", err))
	}
	return data
}

// EncodeMessages encodes and packs msgs.
func EncodeMessages(msgs []chat.Message) Encoded {
	out := make(Encoded, len(msgs))
	for i, m := range msgs {
		out[i] = Pack(EncodeMessage(m))
	}
	return out
}

// Decode parses every message.
func (c Encoded) Decode() ([]chat.Message, error) {
	out := make([]chat.Message, len(c))
	var buf []byte
	for i, p := range c {
		buf = p.AppendTo(buf[:0])
		if err := json.Unmarshal(buf, &out[i]); err != nil {
			return nil, fmt.Errorf("conversation message %d: %w", i, err)
		}
	}
	return out, nil
}

// Bytes is the length of the messages' JSON text as an array.
func (c Encoded) Bytes() int {
	n := 2
	for i, p := range c {
		if i > 0 {
			n++ // the comma
		}
		n += p.Len()
	}
	return n
}

// AppendJSON appends the messages' JSON text as an array to dst.
func (c Encoded) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	dst = c.appendElements(dst)
	return append(dst, ']')
}

// appendElements appends the messages' JSON text separated by commas.
func (c Encoded) appendElements(dst []byte) []byte {
	for i, p := range c {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = p.AppendTo(dst)
	}
	return dst
}

// The encoded forms of a user message and of a framing one: Role is
// chat.Message's first field and Content its second, and neither the
// role nor framing.Prefix holds anything JSON escapes.
var (
	encodedUser    = []byte(`{"role":"user",`)
	encodedFraming = []byte(`{"role":"user","content":"` + framing.Prefix)
)

// IsFramingEncoded is IsFraming for an encoded message.
func IsFramingEncoded(p Packed) bool { return p.HasPrefix(encodedFraming) }

// WindowEncoded is Window for an encoded conversation.
func WindowEncoded(conv Encoded, limit int) (kept, archived Encoded) {
	if limit <= 0 || len(conv) <= limit {
		return conv, nil
	}
	for i := len(conv) - limit; i < len(conv); i++ {
		if IsFramingEncoded(conv[i]) {
			return conv[i:], conv[:i]
		}
	}
	for i := len(conv) - limit - 1; i > 0; i-- {
		if IsFramingEncoded(conv[i]) {
			return conv[i:], conv[:i]
		}
	}
	return conv, nil
}

// dropUnansweredFramingEncoded is dropUnansweredFraming for an encoded
// conversation.
func dropUnansweredFramingEncoded(conv Encoded) Encoded {
	for i := len(conv) - 1; i >= 0; i-- {
		if !conv[i].HasPrefix(encodedUser) {
			return conv
		}
		if IsFramingEncoded(conv[i]) {
			return conv[:i]
		}
	}
	return conv
}

// HoldEncoded moves the conversation into its encoded form: from now on
// Apply appends encoded messages to b.Encoded, Conversation stays empty,
// and a save writes the encoded messages (the same bytes). A living being
// calls it once its state is loaded and caught up.
func (b *Being) HoldEncoded() {
	if b.held {
		return
	}
	b.Encoded = make(Encoded, 0, len(b.Conversation))
	for _, m := range b.Conversation {
		b.appendEncoded(EncodeMessage(m))
	}
	b.Conversation = nil
	b.held = true
}

// arenaChunk is the size of the chunks a held conversation's messages
// are packed into: a being's two hundred messages sit in some fifteen
// chunks of one size class instead of two hundred objects of all sizes,
// which the garbage of requests and checkpoints would leave half-used
// spans between. A chunk goes once none of its messages is kept.
const arenaChunk = 4096

// appendEncoded appends raw, an encoded message, packed into the
// being's current chunk.
func (b *Being) appendEncoded(raw json.RawMessage) {
	if len(raw) > arenaChunk/2 {
		b.Encoded = append(b.Encoded, Pack(raw)) // a large message is its own object
		return
	}
	// A message packs to at most twice its length (every byte a
	// packRef): packed on the stack first, then copied in at its size.
	var scratch [arenaChunk]byte
	packed := appendPacked(scratch[:0], raw)
	if cap(b.arena)-len(b.arena) < len(packed) {
		b.arena = make([]byte, 0, arenaChunk)
	}
	start := len(b.arena)
	b.arena = append(b.arena, packed...)
	b.Encoded = append(b.Encoded, Packed(b.arena[start:len(b.arena):len(b.arena)]))
}

// OwnSlices gives b slices of its own in place of those it shares with
// the Being it was copied from, so that b can be encoded on one goroutine
// while the other goes on living (Apply) on another. Elements are copied
// shallowly: strings, amounts and encoded messages never change in place.
func (b *Being) OwnSlices() {
	b.Mind.Rules = slices.Clone(b.Mind.Rules)
	b.Mind.Learnings = slices.Clone(b.Mind.Learnings)
	b.Mind.Memories = slices.Clone(b.Mind.Memories)
	b.Mind.Children = slices.Clone(b.Mind.Children)
	b.Conversation = slices.Clone(b.Conversation)
	b.RecentActions = slices.Clone(b.RecentActions)
	b.CreatedResources.ChatIDs = slices.Clone(b.CreatedResources.ChatIDs)
	b.CreatedResources.MessageIDs = slices.Clone(b.CreatedResources.MessageIDs)
	b.Grants = slices.Clone(b.Grants)
	b.Funds = slices.Clone(b.Funds)
	b.Inbox = slices.Clone(b.Inbox)
	b.Received = slices.Clone(b.Received)
	b.Framed = slices.Clone(b.Framed)
	b.Outbox = slices.Clone(b.Outbox)
	b.Encoded = slices.Clone(b.Encoded)
	b.arena = nil
}

// Held reports whether the conversation is held encoded (HoldEncoded).
func (b *Being) Held() bool { return b.held }

// Messages is the conversation as messages, decoding it when it is held
// encoded.
func (b *Being) Messages() ([]chat.Message, error) {
	if !b.held {
		return b.Conversation, nil
	}
	return b.Encoded.Decode()
}

// appendMessages appends msgs to whichever form holds the conversation;
// framing says a new cycle begins (an unanswered framing is replaced).
func (b *Being) appendMessages(framing bool, msgs ...chat.Message) {
	if !b.held {
		if framing {
			b.Conversation = dropUnansweredFraming(b.Conversation)
		}
		b.Conversation = append(b.Conversation, msgs...)
		return
	}
	if framing {
		b.Encoded = dropUnansweredFramingEncoded(b.Encoded)
	}
	for _, m := range msgs {
		b.appendEncoded(EncodeMessage(m))
	}
}

// conversationKey is where a compact state.json holds the conversation
// before the encoded messages are put in (MarshalJSON): the first
// occurrence is the top-level key, since the known fields come before
// any extra one and no known field nests one.
var conversationKey = []byte(`"conversation":[]`)

// spliceEncoded puts the encoded conversation into compact, the being
// encoded with an empty one.
func spliceEncoded(compact []byte, conv Encoded) ([]byte, error) {
	at := bytes.Index(compact, conversationKey)
	if at < 0 {
		return nil, fmt.Errorf("encode: the conversation key is missing")
	}
	at += len(conversationKey) - 1 // before the closing bracket
	out := make([]byte, 0, len(compact)+conv.Bytes())
	out = append(out, compact[:at]...)
	out = conv.appendElements(out)
	return append(out, compact[at:]...), nil
}

// AppendEncoded writes encoded messages like Append: each is decoded and
// written as Append writes it, so the archive's lines do not depend on
// how the being held them.
func (a *Archive) AppendEncoded(msgs Encoded) error {
	if len(msgs) == 0 {
		return nil
	}
	decoded, err := msgs.Decode()
	if err != nil {
		return err
	}
	return a.Append(decoded...)
}
