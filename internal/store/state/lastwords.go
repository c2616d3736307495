package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/boundedfile"
)

// LastWordsFile is the being's last words (docs/state.md#last-words): the
// end of a life that storage would not let it journal.
const LastWordsFile = "last-words.json"

// LastWordsSize is the last-words file's fixed size. The file is made at
// this size while storage works and is only ever written in place, whole,
// so writing the last words needs no new block of a full disk.
const LastWordsSize = 4096

// lastWordsReason bounds the reason kept in the file, so that the record
// fits however its text is escaped.
const lastWordsReason = 1024

// LastWords is how a being's life ended when its stopped event could not
// be journaled because storage failed: the status and reason the event
// would have carried, when and in which cycle, and Seq, the last seq its
// journal held then. They stand for the end of the life only while the
// journal holds nothing past Seq (Newer); the being's next boot journals
// them as that stopped event.
type LastWords struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	At     Time   `json:"at"`
	Cycle  uint64 `json:"cycle"`
	Seq    uint64 `json:"seq"`
}

// Newer reports whether the words are newer than a journal whose last
// event is seq: nothing was journaled after them.
func (w *LastWords) Newer(seq uint64) bool { return w != nil && w.Seq >= seq }

// Event is the stopped event the words stand for.
func (w LastWords) Event() Event { return Stopped(w.At, w.Cycle, w.Status, w.Reason) }

// record renders the words as the file's whole content: their JSON object
// padded with spaces to LastWordsSize; nil words are all spaces (none). A
// reason too long for the record is cut at lastWordsReason bytes (a whole
// character) with "…".
func (w *LastWords) record() ([]byte, error) {
	buf := bytes.Repeat([]byte{' '}, LastWordsSize)
	if w == nil {
		buf[LastWordsSize-1] = '\n'
		return buf, nil
	}
	words := *w
	if len(words.Reason) > lastWordsReason {
		cut := lastWordsReason
		for cut > 0 && !utf8.RuneStart(words.Reason[cut]) {
			cut--
		}
		words.Reason = words.Reason[:cut] + "…"
	}
	data, err := json.Marshal(words)
	if err != nil {
		return nil, err
	}
	if len(data) >= LastWordsSize {
		return nil, fmt.Errorf("last words of %d bytes do not fit in %d", len(data), LastWordsSize)
	}
	copy(buf, data)
	buf[LastWordsSize-1] = '\n'
	return buf, nil
}

// WriteLastWords writes w in place over the last-words file and fsyncs
// it. A file already made at its size (PrepareLastWords) takes them
// without a new block; one missing is made, which a full disk may refuse.
func (s *Store) WriteLastWords(w LastWords) error {
	data, err := w.record()
	if err != nil {
		return err
	}
	return s.writeLastWords(data)
}

// PrepareLastWords makes the last-words file at its size, empty, where it
// is missing or is not that size, and empties words that the journal
// took since: those older than through, the seq of its last event. Words
// newer than that are kept.
func (s *Store) PrepareLastWords(through uint64) error {
	path := s.Path(LastWordsFile)
	info, err := os.Lstat(path)
	if err == nil && info.Mode().IsRegular() && info.Size() == LastWordsSize {
		w, err := ReadLastWords(s.dir)
		if err == nil && (w == nil || w.Newer(through)) {
			return nil
		}
	}
	blank, _ := (*LastWords)(nil).record()
	return s.writeLastWords(blank)
}

// writeLastWords writes data (LastWordsSize bytes) at the start of the
// last-words file, creating it if needed, and makes it durable.
func (s *Store) writeLastWords(data []byte) error {
	path := s.Path(LastWordsFile)
	failed := func(err error) error { return fmt.Errorf("cannot write %s: %w", path, err) }
	if s.fault != nil {
		if err := s.fault(LastWordsFile); err != nil {
			return failed(err)
		}
	}
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, FileMode)
	if err != nil {
		return failed(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return failed(err)
	}
	if !info.Mode().IsRegular() {
		return failed(boundedfile.ErrNotRegular)
	}
	if err := writeFileAt(f, data, 0); err != nil {
		return failed(err)
	}
	if info.Size() > int64(len(data)) {
		if err := truncateFile(f, int64(len(data))); err != nil {
			return failed(err)
		}
	}
	if err := syncFile(f); err != nil {
		return failed(err)
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return failed(err)
		}
	}
	return nil
}

// ReadLastWords reads the last words in dir: nil when there are none (no
// file, or an empty one). It writes nothing.
func ReadLastWords(dir string) (*LastWords, error) {
	path := filepath.Join(dir, LastWordsFile)
	data, err := boundedfile.Read(path, LastWordsSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, readFault("last words", path, err)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, nil
	}
	var w LastWords
	if err := json.Unmarshal(data, &w); err != nil || w.Status == "" {
		return nil, fmt.Errorf("last words %s are malformed", path)
	}
	return &w, nil
}

// HeedLastWords makes the last words in dir the status and
// status_reason of b, read from that directory with every event through
// seq last applied, when they are newer than that journal. It reports
// whether they were; words that cannot be read are left out. It writes
// nothing: this is how readers show an end storage refused
// (docs/state.md#last-words).
func HeedLastWords(dir string, b *Being, last uint64) bool {
	w, err := ReadLastWords(dir)
	if err != nil || !w.Newer(max(last, b.Seq())) {
		return false
	}
	b.Status, b.StatusReason = w.Status, w.Reason
	return true
}
