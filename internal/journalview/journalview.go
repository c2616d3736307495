// Package journalview reads a family's journals while the family may be
// writing them, without writing anything (docs/state.md#the-journal): it
// finds every being's state directory under the root's, reads each
// journal's segments in order and then follows activity.jsonl as it
// grows, across segment rotations, handing out only whole lines. The
// debug endpoint's journal tail and balance sparkline and the `singularity
// journal` command are built on it.
package journalview

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// maxDepth bounds the walk down children/ directories.
const maxDepth = 64

// Being is one being's state directory as found on disk.
type Being struct {
	Dir string
	// ID is the being's own id: a child's is its directory name (the id
	// spawn_child gave it), the root's its agent id.
	ID      string
	AgentID string // the family's agent id from state.json
	Name    string // the persona name from state.json
	Depth   int    // 0 for the root
	// Starting is the budget's starting balance from state.json.
	Starting money.Amount
}

// head is the part of state.json a view needs.
type head struct {
	Identity struct {
		AgentID string `json:"agent_id"`
		Name    string `json:"name"`
	} `json:"identity"`
	Budget struct {
		Starting money.Amount `json:"starting"`
	} `json:"budget"`
}

// ReadBeing reads the identity and starting balance of the being in dir.
// Its state.json must be a regular file within state.MaxCheckpoint
// (state.ReadCheckpoint).
func ReadBeing(dir string) (Being, error) {
	data, err := state.ReadCheckpoint(filepath.Join(dir, state.StateFile))
	if err != nil {
		return Being{}, err
	}
	var h head
	if err := json.Unmarshal(data, &h); err != nil {
		return Being{}, err
	}
	return Being{Dir: dir, ID: h.Identity.AgentID, AgentID: h.Identity.AgentID, Name: h.Identity.Name, Starting: h.Budget.Starting}, nil
}

// Family lists the root being in root and every descendant under
// children/<id>/, depth first, parents before children. A child
// directory without a readable state.json (one being created right now)
// is skipped; the root's must be readable.
func Family(root string) ([]Being, error) { return FamilySeen(root, nil) }

// FamilySeen is Family reading state.json only for directories not in
// seen (by directory), which it fills in: a walk repeated to find new
// children reads only theirs.
func FamilySeen(root string, seen map[string]Being) ([]Being, error) {
	read := func(dir string) (Being, error) {
		if b, ok := seen[dir]; ok {
			return b, nil
		}
		b, err := ReadBeing(dir)
		if err == nil && seen != nil {
			seen[dir] = b
		}
		return b, err
	}
	b, err := read(root)
	if err != nil {
		return nil, err
	}
	out := []Being{b}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > maxDepth {
			return
		}
		entries, err := os.ReadDir(filepath.Join(dir, "children"))
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			child := filepath.Join(dir, "children", e.Name())
			c, err := read(child)
			if err != nil {
				continue
			}
			c.ID = e.Name()
			c.Depth = depth
			out = append(out, c)
			walk(child, depth+1)
		}
	}
	walk(root, 1)
	return out, nil
}

// idRE is what a being id may look like in a request: a child's
// directory is named by it, so nothing else can name one.
var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidID reports whether id can name a being (and so a directory).
func ValidID(id string) bool { return idRE.MatchString(id) && id != "." && id != ".." }

// Head is the part of an event every view uses.
type Head struct {
	Type   string       `json:"type"`
	Seq    uint64       `json:"seq"`
	At     state.Time   `json:"at"`
	Cycle  uint64       `json:"cycle"`
	Amount money.Amount `json:"amount"`
}

// Line is one whole journal line and its head.
type Line struct {
	Raw  []byte // the line without its newline
	Head Head
	// Unjournaled marks the line of a being's last words
	// (LastWordsLine), which is not in its journal.
	Unjournaled bool
}

// LastWordsLine is the line shown for a being's last words
// (docs/state.md#last-words): the stopped event they stand for, without
// a seq, with "journaled": false, marked Unjournaled.
func LastWordsLine(w state.LastWords) Line {
	raw, _ := json.Marshal(struct {
		Type      string     `json:"type"`
		At        state.Time `json:"at"`
		Cycle     uint64     `json:"cycle"`
		Status    string     `json:"status"`
		Reason    string     `json:"reason,omitempty"`
		Journaled bool       `json:"journaled"`
	}{state.EventStopped, w.At, w.Cycle, w.Status, w.Reason, false})
	return Line{Raw: raw, Head: Head{Type: state.EventStopped, At: w.At, Cycle: w.Cycle}, Unjournaled: true}
}

// Follower reads one being's journal from its first segment on and then
// follows activity.jsonl as it grows. A rotation (activity.jsonl renamed
// to activity-<seq>.jsonl and a new one begun) is noticed by the file's
// identity, and the rest of the renamed segment is read before the new
// file. Not safe for concurrent use.
type Follower struct {
	dir string
	// tail is set while Tail reads: each file read keeps only its
	// newest keep lines.
	tail    bool
	keep    int
	started bool
	ino     uint64 // identity of the activity.jsonl being followed
	offset  int64  // bytes of it already read, whole lines only
	line    int    // lines of it already read
	seq     uint64 // last seq handed out (a reference journal counts by position)
	last    uint64 // the highest seq read
	// positional is set once a line without seq was read.
	positional bool
}

// NewFollower returns a follower of the journal in dir; nothing is read
// before Next.
func NewFollower(dir string) *Follower { return &Follower{dir: dir} }

// Next returns the whole lines written since the last call (on the first
// call, the whole journal). A torn or unfinished last line is left for a
// later call. A line that is not a JSON object is skipped.
func (f *Follower) Next() ([]Line, error) {
	var out []Line
	current := filepath.Join(f.dir, state.JournalFile)
	if !f.started {
		segs, err := state.Segments(f.dir)
		if err != nil {
			return nil, err
		}
		for _, path := range segs {
			if path == current {
				continue
			}
			lines, _, _, err := f.readFrom(path, 0, 0)
			if err != nil {
				return out, err
			}
			out = append(out, lines...)
		}
		f.started = true
	}
	info, err := os.Stat(current)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	ino := inode(info)
	if f.ino != 0 && ino != f.ino {
		// Rotated: finish the renamed segment, then start the new file.
		if old := f.segmentWith(f.ino); old != "" {
			lines, _, _, err := f.readFrom(old, f.offset, f.line)
			if err != nil {
				return out, err
			}
			out = append(out, lines...)
		}
		f.offset, f.line = 0, 0
	}
	f.ino = ino
	lines, end, n, err := f.readFrom(current, f.offset, f.line)
	out = append(out, lines...)
	f.offset, f.line = end, n
	return out, err
}

// Tail is a first Next that keeps only the newest n lines (all of them
// when there are fewer), in bounded memory: activity.jsonl is read first,
// and the older segments, newest first, only while fewer than n lines
// are found. Later calls of Next go on after the lines Tail read. A
// journal with lines without seq (the reference's, numbered by position)
// is read from its first segment on, as Next does. Called after Next, it
// is Next cut to its newest n lines.
func (f *Follower) Tail(n int) ([]Line, error) {
	if f.started {
		lines, err := f.Next()
		return newest(lines, n), err
	}
	n = max(n, 0) // 0: none of the history, only the place after it
	f.tail, f.keep = true, n
	defer func() { f.tail = false }()
	current := filepath.Join(f.dir, state.JournalFile)
	segs, err := state.Segments(f.dir)
	if err != nil {
		return nil, err
	}
	f.started = true
	var out []Line
	if info, err := os.Stat(current); err == nil {
		f.ino = inode(info)
		out, f.offset, f.line, err = f.readFrom(current, 0, 0)
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for i := len(segs) - 1; i >= 0 && len(out) < n && !f.positional; i-- {
		if segs[i] == current {
			continue
		}
		older, _, _, err := f.readFrom(segs[i], 0, 0)
		if err != nil {
			return nil, err
		}
		out = newest(append(older, out...), n)
	}
	if f.positional {
		// Numbered by position: read in order from the first segment.
		*f = Follower{dir: f.dir}
		lines, err := f.Next()
		return newest(lines, n), err
	}
	return newest(out, n), nil
}

// newest is the last n of lines.
func newest(lines []Line, n int) []Line {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// segmentWith returns the older segment whose file identity is ino.
func (f *Follower) segmentWith(ino uint64) string {
	segs, err := state.Segments(f.dir)
	if err != nil {
		return ""
	}
	for _, path := range segs {
		if info, err := os.Stat(path); err == nil && inode(info) == ino && filepath.Base(path) != state.JournalFile {
			return path
		}
	}
	return ""
}

// readFrom reads the whole lines of path from offset on, the first of
// them line n+1 of the file, and returns them with the offset after the
// last one and its number. The file must be regular and its lines at
// most state.MaxLine bytes: a longer one, finished or not, is refused
// ("state: journal <path> line <n>: line longer than the 16 MiB cap")
// without being read whole.
func (f *Follower) readFrom(path string, offset int64, n int) ([]Line, int64, int, error) {
	file, err := state.OpenRegular(path, "journal")
	if err != nil {
		return nil, offset, n, err
	}
	defer file.Close()
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, n, err
	}
	r := state.NewLineReader(file, state.MaxLine)
	var out []Line
	for {
		data, err := r.ReadLine()
		if errors.Is(err, state.ErrLineTooLong) {
			return out, offset, n, fault.Errorf(fault.ClassState, "journal %s line %d: %w", path, n+1, err)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return out, offset, n, err
		}
		if err != nil {
			// What follows the last newline is still being written.
			return out, offset, n, nil
		}
		offset += int64(len(data))
		n++
		raw := bytes.TrimRight(data[:len(data)-1], "\r")
		if l, ok := f.parse(raw); ok {
			out = append(out, l)
			if f.tail && len(out) > 2*f.keep {
				out = append(out[:0], newest(out, f.keep)...)
			}
		}
	}
}

func (f *Follower) parse(raw []byte) (Line, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return Line{}, false
	}
	var h Head
	if err := json.Unmarshal(t, &h); err != nil {
		return Line{}, false
	}
	if h.Seq == 0 {
		h.Seq = f.seq + 1
		f.positional = true
	}
	f.seq = h.Seq
	f.last = max(f.last, h.Seq)
	return Line{Raw: append([]byte(nil), t...), Head: h}, true
}

// Last is the highest seq read so far, whether a line was handed out
// or cut by Tail (0 before any).
func (f *Follower) Last() uint64 { return f.last }

// inode is the file's identity on this filesystem.
func inode(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Tail returns the last n whole lines of the being's journal in dir (all
// of them when there are fewer). It reads activity.jsonl backwards from
// its end, so a long life costs no more than the lines asked for; only
// when the newest segment holds fewer than n lines, or lines without seq
// (the reference's), are the older segments read as well.
func Tail(dir string, n int) ([]Line, error) {
	if n <= 0 {
		return nil, nil
	}
	if lines, ok := tailFile(filepath.Join(dir, state.JournalFile), n); ok {
		return lines, nil
	}
	lines, err := NewFollower(dir).Next()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, err
}

// tailChunk is how much tailFile reads at a time.
const tailChunk = 64 << 10

// tailFile returns the last n whole lines of path, and false when it
// holds fewer or any of them lacks a seq.
func tailFile(path string, n int) ([]Line, bool) {
	f, err := state.OpenRegular(path, "journal")
	if err != nil {
		return nil, false // the Follower names why
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false
	}
	end := info.Size()
	// Chunks from the end backwards, joined once: what is read is
	// copied once, and no more than n lines and the cap of the one
	// before them is read.
	var chunks [][]byte
	newlines := 0
	lead := 0 // bytes before the first newline read
	for pos := end; pos > 0; {
		size := min(int64(tailChunk), pos)
		pos -= size
		chunk := make([]byte, size)
		if _, err := f.ReadAt(chunk, pos); err != nil {
			return nil, false
		}
		chunks = append(chunks, chunk)
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			lead = i
		} else {
			lead += len(chunk)
		}
		if lead > state.MaxLine {
			return nil, false // a line past the cap: the Follower refuses it
		}
		if newlines += bytes.Count(chunk, []byte{'\n'}); newlines > n || pos == 0 {
			break
		}
	}
	slices.Reverse(chunks)
	data := bytes.Join(chunks, nil)
	// Whole lines only: drop anything after the last newline.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		return nil, false
	}
	raw := bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'})
	var out []Line
	for i := len(raw) - 1; i >= 0 && len(out) < n; i-- {
		if i == 0 && len(raw) > n && int64(len(data)) < end {
			break // the first piece may be cut: never needed when more lines exist
		}
		t := bytes.TrimSpace(raw[i])
		if len(t) == 0 || t[0] != '{' {
			continue
		}
		var h Head
		if json.Unmarshal(t, &h) != nil {
			continue
		}
		if h.Seq == 0 {
			return nil, false
		}
		out = append(out, Line{Raw: append([]byte(nil), t...), Head: h})
	}
	if len(out) < n {
		return nil, false
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, true
}

// LineOf is the journal line of e, as the journal writes it, for a
// reader that has the event rather than its line (a family across
// processes reads only the committed events).
func LineOf(e state.Event) (Line, error) {
	raw, err := e.MarshalJSON()
	if err != nil {
		return Line{}, err
	}
	return Line{Raw: raw, Head: Head{Type: e.Type, Seq: e.Seq, At: e.At, Cycle: e.Cycle, Amount: e.Amount}}, nil
}
