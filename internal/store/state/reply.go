package state

import (
	"strings"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/wire/chat"
)

// Bounds of LastReply.
const (
	// replyLookBack is how many of the newest messages LastReply reads.
	replyLookBack = 64
	// replyRunes is the longest line LastReply returns, "…" included.
	replyRunes = 160
)

// LastReply is the first line with text of the newest assistant message
// that has text, among the newest replyLookBack messages, cut to
// replyRunes characters with "…"; empty when there is none. It reads a
// conversation held encoded one message at a time, newest first.
func (b *Being) LastReply() string {
	n := len(b.Conversation)
	if b.held {
		n = len(b.Encoded)
	}
	for i := n - 1; i >= 0 && i >= n-replyLookBack; i-- {
		m := chat.Message{}
		if b.held {
			msgs, err := b.Encoded[i : i+1].Decode()
			if err != nil {
				return ""
			}
			m = msgs[0]
		} else {
			m = b.Conversation[i]
		}
		if line, ok := replyLine(m); ok {
			return line
		}
	}
	return ""
}

// replyLine is the first line with text of an assistant message.
func replyLine(m chat.Message) (string, bool) {
	if m.Role != "assistant" {
		return "", false
	}
	for line := range strings.Lines(m.Content) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > replyRunes {
			line = string([]rune(line)[:replyRunes-1]) + "…"
		}
		return line, true
	}
	return "", false
}
