package state

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/wisent/singularity/supervision/fault"
)

// HeldDir is the directory, inside a clustered being's state directory,
// of its holders' files (docs/cluster.md#the-holders-files): held/<token>/
// holds the journal, the archive and the state.json written under one
// fencing token, so that every such file has one writer in its whole
// life. The being's own directory keeps its children.
const HeldDir = "held"

// HolderDir is the directory of the files written under token in the
// being's state directory dir.
func HolderDir(dir string, token uint64) string {
	return filepath.Join(dir, HeldDir, strconv.FormatUint(token, 10))
}

// Holding is the files one holder of a being wrote: Token 0 is the
// being's directory itself, what a single process wrote before the
// family was clustered.
type Holding struct {
	Token uint64
	Dir   string
}

// Holdings lists the holdings of the being in dir, oldest token first:
// the directory itself (token 0) when it has a state.json or a journal,
// then each held/<token>/. An entry of held/ that is not a decimal token
// is refused; none of it is written.
func Holdings(dir string) ([]Holding, error) {
	var out []Holding
	for _, name := range []string{StateFile, JournalFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			out = append(out, Holding{Token: 0, Dir: dir})
			break
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, HeldDir))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot list %s: %w", filepath.Join(dir, HeldDir), err)
	}
	var held []Holding
	for _, e := range entries {
		token, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || token == 0 || strconv.FormatUint(token, 10) != e.Name() || !e.IsDir() {
			return nil, fault.Errorf(fault.ClassState, "%s is not a holder's directory",
				filepath.Join(dir, HeldDir, e.Name()))
		}
		held = append(held, Holding{Token: token, Dir: filepath.Join(dir, HeldDir, e.Name())})
	}
	slices.SortFunc(held, func(a, b Holding) int { return cmp.Compare(a.Token, b.Token) })
	return append(out, held...), nil
}

// ReadHolding reads every event a holder wrote, all its segments in
// order. A torn last line of its newest segment is left out, not
// refused: the holder died during that append, and a line that was never
// whole was never committed. Any other defect is an error.
func ReadHolding(h Holding) ([]Event, error) {
	segs, err := Segments(h.Dir)
	if err != nil {
		return nil, err
	}
	var all []Event
	for i, path := range segs {
		events, err := readJournal(path, 0)
		if err != nil && !(i == len(segs)-1 && errors.Is(err, ErrTornLine)) {
			return nil, err
		}
		all = append(all, events...)
	}
	return all, nil
}

// LoadHolding reads the state.json a holder wrote; ok is false when it
// wrote none.
func LoadHolding(h Holding) (b *Being, ok bool, err error) {
	exists, err := Exists(h.Dir)
	if err != nil || !exists {
		return nil, false, err
	}
	b, err = Load(h.Dir)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// StartAt numbers the first event of an empty journal seq (a new
// holder's, which goes on from what the earlier holders committed). It
// is an error once the journal holds an event.
func (j *Journal) StartAt(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file.size > 0 || len(j.events) > 0 {
		return fmt.Errorf("state: the journal in %s is not empty", j.dir)
	}
	j.next, j.first = seq, seq
	return nil
}
