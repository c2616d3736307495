package state

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// Archive is a being's conversation.jsonl: the messages that left the
// conversation window, one JSON message per line, append-only and
// fsynced. Appends are serialized, but the being's single writer is what
// keeps them in order.
type Archive struct {
	mu       sync.Mutex
	file     *appendFile
	repaired int64
}

// OpenArchive opens (creating if needed) the archive at path. A torn
// last line left by a crash is cut by the first append (nothing is
// written before); Repaired reports how many bytes.
func OpenArchive(path string) (*Archive, error) {
	file, cut, err := openAppend(path, "archive", true)
	if err != nil {
		return nil, err
	}
	return &Archive{file: file, repaired: cut}, nil
}

// OpenArchive opens the store's conversation.jsonl; see OpenArchive.
func (s *Store) OpenArchive() (*Archive, error) {
	a, err := OpenArchive(s.Path(ArchiveFile))
	if err == nil {
		a.file.fault = s.faultFor(ArchiveFile)
	}
	return a, err
}

// Repaired is how many bytes of a torn last line were cut at open.
func (a *Archive) Repaired() int64 { return a.repaired }

// Append writes msgs, one line each, in one write, then fsyncs. Appending
// nothing does nothing.
func (a *Archive) Append(msgs ...chat.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // Encode terminates each value with '\n'
	enc.SetEscapeHTML(false)
	for _, m := range msgs {
		if err := enc.Encode(m); err != nil {
			return fault.Errorf(fault.ClassState, "cannot encode archived message: %w", err)
		}
	}
	return a.file.appendLines(buf.Bytes())
}

// Close closes the archive file.
func (a *Archive) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.file.close()
}

// IsFraming reports whether m is a cycle's framing message.
func IsFraming(m chat.Message) bool {
	return m.Role == chat.RoleUser && strings.HasPrefix(m.Content, framing.Prefix)
}

// Window applies the conversation window of
// docs/cycle.md#the-conversation-window: it keeps at most limit of the newest
// messages, cutting only just before a framing message so that a cycle (and
// so an assistant message with tool calls and its tool results) is never
// split. kept is conv from the earliest framing message that leaves at most
// limit messages; archived is what precedes it, oldest first, to be appended
// to the archive before a checkpoint is written without it.
//
// When no such framing message exists (a single cycle longer than limit)
// the cut falls at the newest framing message, so kept may exceed limit;
// with no framing message at all nothing is cut. A limit ≤ 0 means no
// window. Both results share conv's backing array.
func Window(conv []chat.Message, limit int) (kept, archived []chat.Message) {
	if limit <= 0 || len(conv) <= limit {
		return conv, nil
	}
	for i := len(conv) - limit; i < len(conv); i++ {
		if IsFraming(conv[i]) {
			return conv[i:], conv[:i]
		}
	}
	for i := len(conv) - limit - 1; i > 0; i-- {
		if IsFraming(conv[i]) {
			return conv[i:], conv[:i]
		}
	}
	return conv, nil
}
