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

// windowed is the conversation window, encoded, and the messages before
// it, which the next checkpoint archives.
func (b *Being) windowed() (kept, archived state.Encoded) {
	if b.st.Held() {
		return state.WindowEncoded(b.st.Encoded, b.opts.ContextMessages)
	}
	k, a := state.Window(b.st.Conversation, b.opts.ContextMessages)
	return state.EncodeMessages(k), state.EncodeMessages(a)
}

// window is the conversation as the model sees it: the newest messages
// within the window. The messages before it leave the state at the next
// checkpoint.
func (b *Being) window() state.Encoded {
	kept, _ := b.windowed()
	return kept
}

// cognition is a round's system message and window.
func (b *Being) cognition() (chat.Message, state.Encoded) {
	return prompt.System(&b.st.Mind), b.window()
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
	k, _ := state.Window(b.st.Conversation, b.opts.ContextMessages)
	b.st.Conversation = append([]chat.Message(nil), k...)
}
