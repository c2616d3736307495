package state

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/wisent/singularity/internal/boundedfile"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/supervision/fault"
)

// objectWriter writes a JSON object with fields in call order.
type objectWriter struct {
	buf bytes.Buffer
	err error
}

// field appends "key":value. Keys are the journal's own names, ASCII with
// nothing to escape. The values events hold most (strings without
// anything to escape, counters, instants, amounts) are written directly;
// the rest as encoding/json writes them (TestEventFieldsMatchEncodingJSON).
func (w *objectWriter) field(key string, v any) {
	if w.err != nil {
		return
	}
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	w.buf.WriteByte('"')
	w.buf.WriteString(key)
	w.buf.WriteString(`":`)
	var b []byte
	switch v := v.(type) {
	case string:
		if verbatim(v) {
			w.buf.WriteByte('"')
			w.buf.WriteString(v)
			w.buf.WriteByte('"')
			return
		}
	case uint64:
		w.buf.Write(strconv.AppendUint(w.buf.AvailableBuffer(), v, 10))
		return
	case int:
		w.buf.Write(strconv.AppendInt(w.buf.AvailableBuffer(), int64(v), 10))
		return
	case Time:
		b, _ = v.MarshalJSON()
	case money.Amount:
		b, _ = v.MarshalJSON()
	}
	if b == nil {
		var err error
		if b, err = json.Marshal(v); err != nil {
			w.err = fmt.Errorf("field %s: %w", key, err)
			return
		}
	}
	w.buf.Write(b)
}

// verbatim reports whether s is printable ASCII that encoding/json
// writes as it is: no quote, backslash or HTML-escaped <, >, &.
func verbatim(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func (w *objectWriter) close() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// appendFile is an append-only JSON-lines file, fsynced after every
// append. A torn last line is cut off when the file is opened. It holds
// no file descriptor between appends: each append opens the file, writes,
// fsyncs and closes it, so a family of ten thousand beings does not keep
// twenty thousand files open (docs/state.md#atomic-save).
type appendFile struct {
	path  string
	size  int64 // bytes known to be whole lines
	dirty bool  // a failed append may have left bytes past size
	// fault, when set (tests), is asked before every append and fails
	// it with the error it returns.
	fault func() error
}

// openAppend opens (creating with mode 0600) path for appending. A torn
// last line (one without its newline) is cut off: at once, or, when lazy,
// by the first append (nothing is written before), which lets a caller
// open a journal while its boot may still be refused. It returns how
// many torn bytes there are.
//
// what names the file in refusals ("journal", "archive"): one that is not
// a regular file, or whose torn tail is longer than MaxLine (no line the
// runtime writes is), is refused.
func openAppend(path, what string, lazy bool) (*appendFile, int64, error) {
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	fail := func(what string, err error) (*appendFile, int64, error) {
		return nil, 0, fault.Errorf(fault.ClassState, "cannot %s %s: %w", what, path, err)
	}
	// Non-blocking, so that a FIFO is refused rather than waited on.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, FileMode)
	if errors.Is(err, syscall.EISDIR) {
		return nil, 0, fault.Errorf(fault.ClassState, "%s %s is %w", what, path, boundedfile.ErrNotRegular)
	}
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
		return nil, 0, fault.Errorf(fault.ClassState, "%s %s is %w", what, path, boundedfile.ErrNotRegular)
	}
	whole, err := lastNewline(f, info.Size())
	if errors.Is(err, ErrLineTooLong) {
		_ = f.Close()
		return nil, 0, fault.Errorf(fault.ClassState, "%s %s: last %w", what, path, err)
	}
	if err != nil {
		_ = f.Close()
		return fail("read", err)
	}
	cut := info.Size() - whole
	if cut > 0 && !lazy {
		if err := truncateFile(f, whole); err != nil {
			_ = f.Close()
			return fail("repair", err)
		}
		if err := syncFile(f); err != nil {
			_ = f.Close()
			return fail("repair", err)
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
	return &appendFile{path: path, size: whole, dirty: cut > 0 && lazy}, cut, nil
}

// lastNewline returns the length of the file's prefix that ends with its
// last newline (0 if there is none). It looks no further back than
// MaxLine bytes past the last newline: a longer tail is ErrLineTooLong.
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		if size-end > MaxLine {
			return 0, ErrLineTooLong
		}
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
	failed := func(err error) error {
		return fault.Errorf(fault.ClassState, "cannot append to %s: %w", a.path, err)
	}
	if a.dirty {
		if err := os.Truncate(a.path, a.size); err != nil {
			return failed(err)
		}
		a.dirty = false
	}
	if a.fault != nil {
		if err := a.fault(); err != nil {
			a.dirty = os.Truncate(a.path, a.size) != nil
			return failed(err)
		}
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return failed(err)
	}
	fail := func(err error) error {
		// Whatever part of data reached the file must go, or a retry
		// would append after a partial line; if the cut fails too, the
		// next append tries it again first.
		a.dirty = f.Truncate(a.size) != nil
		_ = f.Close()
		return failed(err)
	}
	if err := writeFile(f, data); err != nil {
		return fail(err)
	}
	if err := syncFile(f); err != nil {
		return fail(err)
	}
	_ = f.Close() // the data is fsynced: a failing close loses nothing
	a.size += int64(len(data))
	return nil
}

// close releases the file; an appendFile holds no descriptor between
// appends, so there is nothing to close.
func (a *appendFile) close() error { return nil }

// Journal is a being's activity.jsonl, open for appending: the being's
// write-ahead log (docs/state.md#the-journal). Events are appended in
// steps, each one write and one fsync, and numbered by seq. It is not
// safe for concurrent use: one writer at a time, the being's.
type Journal struct {
	mu       sync.Mutex // the writer pool and the actor may meet here
	file     *appendFile
	dir      string
	repaired int64
	next     uint64  // the seq the next event gets
	first    uint64  // the seq of this segment's first event (next when empty)
	events   []Event // what Open read, until Loaded takes it
	fault    func() error
	rotating bool // a Rotate closed the segment and has not finished
}

// OpenJournal opens (creating if needed) the journal at path and reads
// it. A torn last line left by a crash during an append is replaced by a
// warning event (at, cycle) saying so: repair is never a boot failure.
// The numbering goes on from the last event's seq; events of a
// reference journal, which carry none, count by position.
func OpenJournal(path string, at Time, cycle uint64) (*Journal, error) {
	j, err := openJournal(path, false)
	if err != nil {
		return nil, err
	}
	if cut := j.repaired; cut > 0 {
		msg := fmt.Sprintf("activity journal: removed a torn last line of %d bytes", cut)
		step, err := j.AppendStep([]Event{Warning(at, cycle, msg)})
		if err != nil {
			_ = j.file.close()
			return nil, err
		}
		j.events = append(j.events, step...)
	}
	return j, nil
}

// openJournal opens and reads the journal at path (see openAppend for
// lazy).
func openJournal(path string, lazy bool) (*Journal, error) {
	file, cut, err := openAppend(path, "journal", lazy)
	if err != nil {
		return nil, err
	}
	events, err := ReadJournal(path)
	if err != nil && !(cut > 0 && errors.Is(err, ErrTornLine)) {
		_ = file.close()
		return nil, err
	}
	j := &Journal{file: file, dir: filepath.Dir(path), repaired: cut, events: events, next: 1}
	if n := len(events); n > 0 {
		j.first, j.next = events[0].Seq, events[n-1].Seq+1
	} else if seq, err := lastSeqBefore(j.dir); err == nil {
		j.next = seq + 1
	}
	if j.first == 0 {
		j.first = j.next
	}
	return j, nil
}

// ReopenJournal opens the store's activity.jsonl for a being that may
// still be refused at boot: it writes nothing. A torn last line is cut by
// the first append; Repaired says how long it was, for the caller to
// journal with that first step.
func (s *Store) ReopenJournal() (*Journal, error) {
	j, err := openJournal(s.Path(JournalFile), true)
	if err == nil {
		j.SetFault(s.faultFor(JournalFile))
	}
	return j, err
}

// OpenJournal opens the store's activity.jsonl; see OpenJournal.
func (s *Store) OpenJournal(at Time, cycle uint64) (*Journal, error) {
	j, err := OpenJournal(s.Path(JournalFile), at, cycle)
	if err == nil {
		j.fault = s.faultFor(JournalFile)
		j.file.fault = j.fault
	}
	return j, err
}

// SetFault installs a test's write hook (see Fault) on the journal.
func (j *Journal) SetFault(f func() error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fault = f
	j.file.fault = f
}

// Repaired is how many bytes of a torn last line were cut at open (0 if
// none).
func (j *Journal) Repaired() int64 { return j.repaired }

// Loaded hands over the events Open read from the current segment (once;
// later calls return nil).
func (j *Journal) Loaded() []Event {
	events := j.events
	j.events = nil
	return events
}

// NextSeq is the seq the next appended event will get.
func (j *Journal) NextSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

// Encode numbers the events of one step from the journal's next seq and
// renders them as the lines AppendEncoded writes; nothing is written and
// the numbering does not advance until AppendEncoded succeeds.
func (j *Journal) Encode(step []Event) ([]Event, []byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	numbered := make([]Event, len(step))
	var buf bytes.Buffer
	for i, e := range step {
		e.Seq = j.next + uint64(i)
		line, err := e.MarshalJSON()
		if err != nil {
			return nil, nil, fault.Errorf(fault.ClassState, "cannot encode journal event: %w", err)
		}
		if len(line) > MaxLine {
			// No reader would take it back.
			return nil, nil, fault.Errorf(fault.ClassState, "cannot encode journal event %s: %w", e.Type, ErrLineTooLong)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		numbered[i] = e
	}
	return numbered, buf.Bytes(), nil
}

// AppendEncoded writes one step encoded by Encode (n events) with one
// write and one fsync. On failure nothing of it stays in the file and
// the numbering is unchanged, so the step can be tried again.
func (j *Journal) AppendEncoded(lines []byte, n int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.file.appendLines(lines); err != nil {
		return err
	}
	j.next += uint64(n)
	return nil
}

// AppendStep numbers and writes one step (see Encode and AppendEncoded)
// and returns its events as written.
func (j *Journal) AppendStep(step []Event) ([]Event, error) {
	numbered, lines, err := j.Encode(step)
	if err != nil {
		return nil, err
	}
	if err := j.AppendEncoded(lines, len(step)); err != nil {
		return nil, err
	}
	return numbered, nil
}

// Append writes one event as a step of its own.
func (j *Journal) Append(e Event) error {
	_, err := j.AppendStep([]Event{e})
	return err
}

// Size is the current segment's size in bytes.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.file.size
}

// Rotate starts a new segment: the current activity.jsonl becomes
// activity-<first seq>.jsonl and a fresh activity.jsonl is opened. Call
// it only right before a checkpoint that includes every event so far, so
// that loading never needs the old segment (docs/state.md#the-journal).
//
// A rotation that fails partway (no space for the new file, a read-only
// disk) goes on where it stopped when it is called again.
func (j *Journal) Rotate() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	path := j.file.path
	old := filepath.Join(j.dir, segmentName(j.first))
	if !j.rotating {
		// Every line is fsynced already; a failed close loses nothing,
		// and the descriptor is released either way.
		_ = j.file.close()
		j.rotating = true
	}
	if _, err := os.Lstat(path); err == nil { // not renamed yet
		if err := renameFile(path, old); err != nil {
			return fault.Errorf(fault.ClassState, "cannot rotate %s: %w", path, err)
		}
	}
	file, _, err := openAppend(path, "journal", false)
	if err != nil {
		return err
	}
	file.fault = j.fault
	j.file, j.first, j.rotating = file, j.next, false
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.file.close()
}

// segmentName is the file name of an older journal segment.
func segmentName(first uint64) string { return fmt.Sprintf("activity-%d.jsonl", first) }

// Segments lists the journal segments of a state directory in order,
// oldest first, activity.jsonl (when it exists) last.
func Segments(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot list %s: %w", dir, err)
	}
	type seg struct {
		first uint64
		path  string
	}
	var segs []seg
	current := ""
	for _, e := range entries {
		var first uint64
		name := e.Name()
		if name == JournalFile {
			current = filepath.Join(dir, name)
		} else if _, err := fmt.Sscanf(name, "activity-%d.jsonl", &first); err == nil && name == segmentName(first) {
			segs = append(segs, seg{first, filepath.Join(dir, name)})
		}
	}
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(a.first, b.first) })
	out := make([]string, 0, len(segs)+1)
	for _, s := range segs {
		out = append(out, s.path)
	}
	if current != "" {
		out = append(out, current)
	}
	return out, nil
}

// lastSeqBefore is the last seq of the newest older segment (0 if none),
// for an empty activity.jsonl right after a rotation.
func lastSeqBefore(dir string) (uint64, error) {
	segs, err := Segments(dir)
	if err != nil {
		return 0, err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if filepath.Base(segs[i]) == JournalFile {
			continue
		}
		events, err := ReadJournal(segs[i])
		if err != nil {
			return 0, err
		}
		if n := len(events); n > 0 {
			return events[n-1].Seq, nil
		}
	}
	return 0, nil
}

// ReadAll reads every segment of a state directory's journal, in order:
// the whole life, for the invariant checks.
func ReadAll(dir string) ([]Event, error) { return ReadAllPast(dir, 0) }

// ReadAllPast is ReadAll for a reader that needs only the money of the
// events up to seq past (a checkpoint's journal_seq): those come back
// with Type, Seq, Cycle and Amount alone, each line still validated whole
// but only those fields decoded (readHead); the events after past come
// back whole. Totals over the result are ReadAll's.
func ReadAllPast(dir string, past uint64) ([]Event, error) {
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	var all []Event
	for _, path := range segs {
		events, err := readJournal(path, past)
		if err != nil {
			return all, err
		}
		all = append(all, events...)
	}
	return all, nil
}

// errNotObject reports a journal line that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// ErrTornLine reports a journal whose last line has no newline: it was
// not opened (and so not repaired) since a crash.
var ErrTornLine = errors.New("torn last line")

// ReadJournal loads every event of the journal segment at path, in
// order; an event without seq (the reference's) gets the one after its
// predecessor's. Every line must be a JSON object; an unrepaired torn
// last line is reported as ErrTornLine (open the journal first to repair
// it).
func ReadJournal(path string) ([]Event, error) { return readJournal(path, 0) }

// eventHead is the part of an event ReadAllPast decodes up to its seq.
type eventHead struct {
	Type   string       `json:"type"`
	Seq    uint64       `json:"seq"`
	Cycle  uint64       `json:"cycle"`
	Amount money.Amount `json:"amount"`
}

// readHead decodes a journal line's eventHead: the line is validated
// whole, then only its top-level type, seq, cycle and (for the events
// that move money) amount are decoded.
func readHead(line []byte) (eventHead, error) {
	var h eventHead
	if !json.Valid(line) {
		// Unmarshal says what is wrong with it.
		return h, json.Unmarshal(line, &h)
	}
	var amount []byte
	odd := false // a field not in the shape this runtime writes
	err := topLevel(line, func(key string, raw []byte) {
		var err error
		switch key {
		case "type":
			var ok bool
			if h.Type, ok = plainString(raw); !ok {
				odd = true
			}
		case "seq":
			h.Seq, err = strconv.ParseUint(string(raw), 10, 64)
		case "cycle":
			h.Cycle, err = strconv.ParseUint(string(raw), 10, 64)
		case "amount":
			amount = raw
		default:
			// encoding/json would match a key in another case.
			for _, want := range [...]string{"type", "seq", "cycle", "amount"} {
				odd = odd || strings.EqualFold(key, want)
			}
		}
		odd = odd || err != nil
	})
	if err != nil {
		return h, err
	}
	if odd {
		// encoding/json decides, and names what is wrong.
		h = eventHead{}
		return h, json.Unmarshal(line, &h)
	}
	switch h.Type {
	case EventCostDebited, EventRevenueCredited, EventEndowmentGranted:
		if amount != nil {
			if err := h.Amount.UnmarshalJSON(amount); err != nil {
				return h, fmt.Errorf("amount: %w", err)
			}
		}
	}
	return h, nil
}

// plainString is the text of a JSON string without escapes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// readJournal is ReadJournal, with the events up to seq past decoded as
// their eventHead alone. The file must be regular (OpenRegular) and its
// lines at most MaxLine bytes.
func readJournal(path string, past uint64) ([]Event, error) {
	f, err := OpenRegular(path, "journal")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []Event
	r := NewLineReader(f, MaxLine)
	for n := 1; ; n++ {
		line, err := r.ReadLine()
		if errors.Is(err, ErrLineTooLong) {
			return events, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n, err)
		}
		if len(line) > 0 && line[len(line)-1] != '\n' {
			return events, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n, ErrTornLine)
		}
		if len(line) > 0 {
			if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] != '{' {
				// null, a list or a scalar would decode without error
				// into an empty event: a journal line is an object.
				return events, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n, errNotObject)
			}
			// The reference's events carry no seq: they count by
			// position.
			position := uint64(len(events)) + 1
			if k := len(events); k > 0 {
				position = events[k-1].Seq + 1
			}
			var e Event
			if past > 0 {
				h, herr := readHead(line)
				if herr != nil {
					return events, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n, herr)
				}
				e = Event{Type: h.Type, Seq: h.Seq, Cycle: h.Cycle, Amount: h.Amount}
				if e.Seq == 0 {
					e.Seq = position
				}
			}
			if e.Seq == 0 || e.Seq > past {
				e = Event{}
				if uerr := json.Unmarshal(line, &e); uerr != nil {
					return events, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n, uerr)
				}
				if e.Seq == 0 {
					e.Seq = position
				}
			}
			events = append(events, e)
		}
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return events, fault.Errorf(fault.ClassState, "cannot read journal %s: %w", path, err)
		}
	}
}
