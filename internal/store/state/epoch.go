package state

import "github.com/wisent/singularity/internal/wire/chat"

// The epoch window of the stable prompt layout
// (docs/cycle.md#the-stable-layout): the conversation window is kept
// whole while it holds at most limit messages. When it would pass limit,
// it is cut back to at most half of it, at a framing message, so a
// request shares its prefix with the one before it except once per
// epoch. The cut is placed by the messages up to the current cycle's
// framing only, so it does not move while that cycle runs.

// epochCut is where the epoch window of a conversation of n messages
// starts: 0 for no cut. framing reports whether message i is a framing
// message.
func epochCut(n, limit int, framing func(i int) bool) int {
	if limit <= 0 || n <= limit {
		return 0
	}
	current := -1 // the newest framing message: the running cycle's
	for i := n - 1; i >= 0; i-- {
		if framing(i) {
			current = i
			break
		}
	}
	if current <= 0 {
		return 0
	}
	for i := 0; i < current; i++ {
		if framing(i) && current+1-i <= limit/2 {
			return i
		}
	}
	return current
}

// WindowEpoch is Window for the stable layout: it keeps conv whole up to
// limit messages and otherwise cuts it back to the earliest framing
// message from which the messages up to the running cycle's framing are
// at most limit/2 (at the running cycle's framing when there is none).
// kept and archived share conv's backing array, as Window's do.
func WindowEpoch(conv []chat.Message, limit int) (kept, archived []chat.Message) {
	cut := epochCut(len(conv), limit, func(i int) bool { return IsFraming(conv[i]) })
	return conv[cut:], conv[:cut]
}

// WindowEpochEncoded is WindowEpoch for an encoded conversation.
func WindowEpochEncoded(conv Encoded, limit int) (kept, archived Encoded) {
	cut := epochCut(len(conv), limit, func(i int) bool { return IsFramingEncoded(conv[i]) })
	return conv[cut:], conv[:cut]
}
