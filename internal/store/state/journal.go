package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision"
)

// Journal event types (docs/state.md#the-state-directory).
const (
	EventStarted         = "started"
	EventCycleStarted    = "cycle_started"
	EventModelCompleted  = "model_completed"
	EventCostDebited     = "cost_debited"
	EventToolFinished    = "tool_finished"
	EventRevenueCredited = "revenue_credited"
	EventWarning         = "warning"
	EventStopped         = "stopped"
)

// Event is one line of activity.jsonl. Which fields belong to an event
// depends on its Type; MarshalJSON writes exactly those, "type" first and
// the rest in the order of docs/state.md#the-state-directory:
//
//	started          {at}
//	cycle_started    {at, cycle}
//	model_completed  {at, cycle, usage}
//	cost_debited     {at, cycle, amount}
//	tool_finished    {at, cycle, tool, status}
//	revenue_credited {at, cycle, amount, source}
//	warning          {at, cycle, message}
//	stopped          {at, cycle, status}
//
// Build events with the constructors below.
type Event struct {
	Type    string       `json:"type"`
	At      Time         `json:"at"`
	Cycle   uint64       `json:"cycle"`
	Usage   chat.Usage   `json:"usage"`
	Amount  money.Amount `json:"amount"`
	Source  string       `json:"source"`
	Tool    string       `json:"tool"`
	Status  string       `json:"status"`
	Message string       `json:"message"`
}

// Started is the event of a being coming alive (fresh or resumed).
func Started(at Time) Event { return Event{Type: EventStarted, At: at} }

// CycleStarted opens a cycle.
func CycleStarted(at Time, cycle uint64) Event {
	return Event{Type: EventCycleStarted, At: at, Cycle: cycle}
}

// ModelCompleted records a completion's token usage.
func ModelCompleted(at Time, cycle uint64, u chat.Usage) Event {
	return Event{Type: EventModelCompleted, At: at, Cycle: cycle, Usage: u}
}

// CostDebited records a debit (possibly 0).
func CostDebited(at Time, cycle uint64, amount money.Amount) Event {
	return Event{Type: EventCostDebited, At: at, Cycle: cycle, Amount: amount}
}

// ToolFinished records a tool call's outcome status.
func ToolFinished(at Time, cycle uint64, tool, status string) Event {
	return Event{Type: EventToolFinished, At: at, Cycle: cycle, Tool: tool, Status: status}
}

// RevenueCredited records a credit from trusted evidence returned by tool
// source.
func RevenueCredited(at Time, cycle uint64, amount money.Amount, source string) Event {
	return Event{Type: EventRevenueCredited, At: at, Cycle: cycle, Amount: amount, Source: source}
}

// Warning records a problem the being survived.
func Warning(at Time, cycle uint64, message string) Event {
	return Event{Type: EventWarning, At: at, Cycle: cycle, Message: message}
}

// Stopped records the final status of a being's life in this process.
func Stopped(at Time, cycle uint64, status string) Event {
	return Event{Type: EventStopped, At: at, Cycle: cycle, Status: status}
}

// MarshalJSON writes the event's own fields in spec order.
func (e Event) MarshalJSON() ([]byte, error) {
	var w objectWriter
	w.field("type", e.Type)
	w.field("at", e.At)
	switch e.Type {
	case EventStarted:
	case EventCycleStarted:
		w.field("cycle", e.Cycle)
	case EventModelCompleted:
		w.field("cycle", e.Cycle)
		w.field("usage", e.Usage)
	case EventCostDebited:
		w.field("cycle", e.Cycle)
		w.field("amount", e.Amount)
	case EventToolFinished:
		w.field("cycle", e.Cycle)
		w.field("tool", e.Tool)
		w.field("status", e.Status)
	case EventRevenueCredited:
		w.field("cycle", e.Cycle)
		w.field("amount", e.Amount)
		w.field("source", e.Source)
	case EventWarning:
		w.field("cycle", e.Cycle)
		w.field("message", e.Message)
	case EventStopped:
		w.field("cycle", e.Cycle)
		w.field("status", e.Status)
	default:
		return nil, fmt.Errorf("unknown journal event type %q", e.Type)
	}
	return w.close()
}

// objectWriter writes a JSON object with fields in call order.
type objectWriter struct {
	buf bytes.Buffer
	err error
}

func (w *objectWriter) field(key string, v any) {
	if w.err != nil {
		return
	}
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	w.buf.Write(k)
	w.buf.WriteByte(':')
	b, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("field %s: %w", key, err)
		return
	}
	w.buf.Write(b)
}

func (w *objectWriter) close() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// appendFile is an append-only JSON-lines file, fsynced after every
// append. A torn last line is cut off when the file is opened.
type appendFile struct {
	f    *os.File
	path string
	size int64 // bytes known to be whole lines
}

// openAppend opens (creating with mode 0600) path for appending. A torn
// last line (one without its newline) is cut off; when replace is not nil
// the torn bytes are overwritten in place by the line replace(cut) returns
// and the file is then cut after it, so the repair and its record land
// together: a crash in between leaves a torn tail that the next open
// repairs again. It returns how many torn bytes were removed.
func openAppend(path string, replace func(cut int64) []byte) (*appendFile, int64, error) {
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	fail := func(what string, err error) (*appendFile, int64, error) {
		return nil, 0, supervision.Errorf(supervision.ClassState, "cannot %s %s: %w", what, path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return fail("open", err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fail("open", err)
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, 0, supervision.Errorf(supervision.ClassState, "%s is not a regular file", path)
	}
	whole, err := lastNewline(f, info.Size())
	if err != nil {
		_ = f.Close()
		return fail("read", err)
	}
	cut := info.Size() - whole
	end := whole
	if cut > 0 {
		if replace != nil {
			line := replace(cut)
			if _, err := f.WriteAt(line, whole); err != nil {
				_ = f.Close()
				return fail("repair", err)
			}
			if err := f.Sync(); err != nil {
				_ = f.Close()
				return fail("repair", err)
			}
			end += int64(len(line))
		}
		if end < info.Size() {
			if err := f.Truncate(end); err != nil {
				_ = f.Close()
				return fail("repair", err)
			}
			if err := f.Sync(); err != nil {
				_ = f.Close()
				return fail("repair", err)
			}
		}
	}
	if err := f.Close(); err != nil {
		return fail("open", err)
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fail("create", err)
		}
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail("open", err)
	}
	return &appendFile{f: f, path: path, size: end}, cut, nil
}

// lastNewline returns the length of the file's prefix that ends with its
// last newline (0 if there is none).
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// appendLines writes data (whole lines) in one write and fsyncs. If the
// write fails the file is cut back so no partial line stays behind.
func (a *appendFile) appendLines(data []byte) error {
	if _, err := a.f.Write(data); err != nil {
		_ = a.f.Truncate(a.size)
		return supervision.Errorf(supervision.ClassState, "cannot append to %s: %w", a.path, err)
	}
	if err := a.f.Sync(); err != nil {
		return supervision.Errorf(supervision.ClassState, "cannot append to %s: %w", a.path, err)
	}
	a.size += int64(len(data))
	return nil
}

func (a *appendFile) close() error {
	if err := a.f.Close(); err != nil {
		return supervision.Errorf(supervision.ClassState, "cannot close %s: %w", a.path, err)
	}
	return nil
}

// Journal is a being's activity.jsonl, open for appending. It is not safe
// for concurrent use: the being actor is its single writer.
type Journal struct {
	file     *appendFile
	repaired int64
}

// OpenJournal opens (creating if needed) the journal at path. A torn last
// line left by a crash during an append is replaced by a warning event
// (at, cycle) saying so: repair is never a boot failure.
func OpenJournal(path string, at Time, cycle uint64) (*Journal, error) {
	var encodeErr error
	warning := func(cut int64) []byte {
		msg := fmt.Sprintf("activity journal: removed a torn last line of %d bytes", cut)
		line, err := json.Marshal(Warning(at, cycle, msg))
		encodeErr = err
		return append(line, '\n')
	}
	file, cut, err := openAppend(path, warning)
	if err != nil {
		return nil, err
	}
	if encodeErr != nil { // unreachable: a warning always encodes
		_ = file.close()
		return nil, supervision.Errorf(supervision.ClassState, "cannot encode journal event: %w", encodeErr)
	}
	return &Journal{file: file, repaired: cut}, nil
}

// OpenJournal opens the store's activity.jsonl; see OpenJournal.
func (s *Store) OpenJournal(at Time, cycle uint64) (*Journal, error) {
	return OpenJournal(s.Path(JournalFile), at, cycle)
}

// Repaired is how many bytes of a torn last line were cut at open (0 if
// none).
func (j *Journal) Repaired() int64 { return j.repaired }

// Append writes one event as one line and fsyncs it.
func (j *Journal) Append(e Event) error {
	line, err := json.Marshal(e)
	if err != nil {
		return supervision.Errorf(supervision.ClassState, "cannot encode journal event: %w", err)
	}
	return j.file.appendLines(append(line, '\n'))
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.file.close() }

// ErrTornLine reports a journal whose last line has no newline: it was
// not opened (and so not repaired) since a crash.
var ErrTornLine = errors.New("torn last line")

// ReadJournal loads every event of the journal at path, in order. Every
// line must be a JSON object; an unrepaired torn last line is reported as
// ErrTornLine (open the journal first to repair it).
func ReadJournal(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, supervision.Errorf(supervision.ClassState, "cannot read journal %s: %w", path, err)
	}
	defer f.Close()
	var events []Event
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			return events, supervision.Errorf(supervision.ClassState, "journal %s line %d: %w", path, n, ErrTornLine)
		}
		if len(line) > 0 {
			var e Event
			if uerr := json.Unmarshal(line, &e); uerr != nil {
				return events, supervision.Errorf(supervision.ClassState, "journal %s line %d: %w", path, n, uerr)
			}
			events = append(events, e)
		}
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return events, supervision.Errorf(supervision.ClassState, "cannot read journal %s: %w", path, err)
		}
	}
}
