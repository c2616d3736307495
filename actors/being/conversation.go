package being

import (
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
)

// A living being holds its conversation encoded
// (docs/family.md#families-of-thousands, state.Being.HoldEncoded): one
// JSON value per message, appended as each step is applied. A round's
// request carries the window's values as they are (after the system
// message, the one message built per round), its body bound is their
// exact length, and a checkpoint writes the same bytes. A being driven
// handler by handler in a test, loaded but not started, keeps the parsed
// conversation; both forms give the same requests and the same files.

// cycleGrowth is the room the conversation kept by a checkpoint has for
// one more ordinary cycle (a framing, a call and its result, the reply):
// appending to a full slice doubles it, which at the default window
// would leave two hundred empty entries in every being's heap.
const cycleGrowth = 8

// stable reports whether the being lays its prompt out for providers'
// prompt caches (docs/cycle.md#the-stable-layout).
func (b *Being) stable() bool { return b.opts.PromptLayout == prompt.LayoutStable }

// windowed is the conversation window, encoded, and the messages before
// it, which the next checkpoint archives: cut by whole cycles (seed) or
// in epochs (stable).
func (b *Being) windowed() (kept, archived state.Encoded) {
	if b.st.Held() {
		if b.stable() {
			return state.WindowEpochEncoded(b.st.Encoded, b.opts.ContextMessages)
		}
		return state.WindowEncoded(b.st.Encoded, b.opts.ContextMessages)
	}
	k, a := b.windowMessages()
	return state.EncodeMessages(k), state.EncodeMessages(a)
}

// windowMessages is windowed for a conversation held parsed.
func (b *Being) windowMessages() (kept, archived []chat.Message) {
	if b.stable() {
		return state.WindowEpoch(b.st.Conversation, b.opts.ContextMessages)
	}
	return state.Window(b.st.Conversation, b.opts.ContextMessages)
}

// window is the conversation as the model sees it: the newest messages
// within the window. The messages before it leave the state at the next
// checkpoint.
func (b *Being) window() state.Encoded {
	kept, _ := b.windowed()
	return kept
}

// cognition is a round's system message and window. The seed layout
// builds the system message from the mind every round. The stable one
// (docs/cycle.md#the-stable-layout) builds it at a cycle's first round
// and keeps it for the cycle, so that every request of the cycle is the
// one before it plus the messages appended since; across cycles it keeps
// it for the epoch, rebuilding it only when the window's start moved (a
// cut) or the prompt, rules or learnings changed.
func (b *Being) cognition() (chat.Message, state.Encoded) {
	window := b.window()
	if !b.stable() {
		return prompt.System(&b.st.Mind), window
	}
	if b.cycle != nil && b.cycle.system != nil {
		return *b.cycle.system, window
	}
	c := b.promptCache()
	start := ""
	if len(window) > 0 {
		start = string(window[0])
	}
	if stable := prompt.StableSystemText(&b.st.Mind); !c.built || start != c.start || stable != c.stable {
		c.built, c.start, c.stable = true, start, stable
		c.system = chat.Message{Role: chat.RoleSystem, Content: prompt.SystemText(&b.st.Mind)}
	}
	if b.cycle != nil {
		system := c.system
		b.cycle.system = &system
	}
	return c.system, window
}

// promptCache is what the stable layout keeps between cycles: the
// epoch's system message (the prompt, rules, learnings and the memories
// as of the epoch's start), what it was built from, and the newest
// memory the last framing message had seen.
type promptCache struct {
	built  bool
	start  string // the window's first message, encoded
	stable string // prompt.StableSystemText it was built with
	system chat.Message
	// framed is the id of the newest memory when the last answered
	// framing was written, pending the one of the framing written last
	// (it counts once the model answers it: a framing replaced unanswered
	// lists its memories again); seen is false until the first framing
	// of this incarnation (whose epoch system message holds every
	// memory).
	framed, pending string
	seen            bool
}

func (b *Being) promptCache() *promptCache {
	if b.cache == nil {
		b.cache = &promptCache{}
	}
	return b.cache
}

// answered records that the model answered the cycle's framing: its
// memories are listed, and the next framing lists only newer ones.
func (b *Being) answered() {
	if b.cache != nil {
		b.cache.framed = b.cache.pending
	}
}

// newMemories are the memories made since the last answered framing
// message: what the stable layout's next framing lists. The first
// framing of an incarnation lists none, since its epoch's system message
// holds them.
func (b *Being) newMemories() []state.Memory {
	c := b.promptCache()
	mems := b.st.Mind.Memories
	newest := ""
	if len(mems) > 0 {
		newest = mems[len(mems)-1].ID
	}
	since, framed := c.framed, c.seen
	c.pending = newest
	if !framed {
		c.framed, c.seen = newest, true
	}
	if !framed || since == newest {
		return nil
	}
	for i := len(mems) - 1; i >= 0; i-- {
		if mems[i].ID == since {
			return mems[i+1:]
		}
	}
	return mems[max(0, len(mems)-prompt.SystemMemories):]
}

// snapshotWith is the state a checkpoint writes: the being as applied,
// with only the window kept.
func (b *Being) snapshotWith(kept state.Encoded) state.Being {
	snapshot := *b.st
	if !snapshot.Held() {
		snapshot.Conversation = nil
		snapshot.HoldEncoded()
	}
	snapshot.Encoded = kept
	return snapshot
}

// keepWindow drops from the conversation what a durable checkpoint
// archived, keeping kept in a slice of its own.
func (b *Being) keepWindow(kept state.Encoded) {
	if b.st.Held() {
		conv := make(state.Encoded, len(kept), len(kept)+cycleGrowth)
		copy(conv, kept)
		b.st.Encoded = conv
		return
	}
	k, _ := b.windowMessages()
	b.st.Conversation = append([]chat.Message(nil), k...)
}
