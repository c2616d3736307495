package being

import (
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
)

// A living being holds its conversation encoded (SPEC §23,
// state.Being.HoldEncoded): one JSON value per message, appended as each
// step is applied. A round's request carries the window's values as they
// are (after the system message, the one message built per round), its
// body bound is their exact length, and a checkpoint writes the same
// bytes. A being driven handler by handler in a test, loaded but not
// started, keeps the parsed conversation; both forms give the same
// requests and the same files.

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
// builds the system message from the mind every round; the stable one
// builds it from the prompt, rules and learnings at the cycle's first
// round and keeps it for the cycle, so that every request of the cycle
// is the one before it plus the messages appended since.
func (b *Being) cognition() (chat.Message, state.Encoded) {
	if !b.stable() {
		return prompt.System(&b.st.Mind), b.window()
	}
	if b.cycle == nil {
		return chat.Message{Role: chat.RoleSystem, Content: prompt.StableSystemText(&b.st.Mind)}, b.window()
	}
	if b.cycle.system == nil {
		b.cycle.system = &chat.Message{Role: chat.RoleSystem, Content: prompt.StableSystemText(&b.st.Mind)}
	}
	return *b.cycle.system, b.window()
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
