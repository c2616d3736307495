package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/wisent/singularity/supervision/fault"
)

// File names inside a state directory (docs/state.md#the-state-directory,
// docs/cycle.md#the-conversation-window).
const (
	StateFile   = "state.json"
	JournalFile = "activity.jsonl"
	ArchiveFile = "conversation.jsonl"
)

// Permissions of everything a Store creates: owner only.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// tempPattern names the temporary files of atomic saves; leftovers from a
// crash are removed by the holder of the directory's lock
// (RemoveLeftovers).
const tempPattern = "." + StateFile + ".*.tmp"

// Store is one being's state directory. A Store performs no locking:
// exactly one actor, the being's own, may write through it (its writes
// run on the family's writer pool, one at a time).
type Store struct {
	dir   string
	fault Fault
	// checkpointMu makes WriteCheckpoint one at a time; written is the
	// generation of the checkpoint last written.
	checkpointMu sync.Mutex
	written      uint64
}

// Fault is a test's hook on durable writes: asked before each write with
// the name of the file written (state.json, activity.jsonl,
// conversation.jsonl), it fails that write with the error it returns (nil
// lets it through). Production code sets none.
type Fault func(file string) error

// SetFault installs f on the store and on the journal and archive opened
// from it afterwards.
func (s *Store) SetFault(f Fault) { s.fault = f }

// faultFor is the appendFile hook for one file name.
func (s *Store) faultFor(name string) func() error {
	if s.fault == nil {
		return nil
	}
	f := s.fault
	return func() error { return f(name) }
}

// Open makes dir (mode 0700, parents included, each durable: MakeDir) if
// it does not exist. It never touches state.json, and it removes
// nothing: it takes no lock, and another runtime may be saving in dir
// (the temporary files of crashed saves are removed under the lock, by
// OpenLocked or RemoveLeftovers). A runtime that lives in dir opens it
// with OpenLocked.
//
// A directory that already exists must be owned by the effective user of
// the process and is tightened to 0700 (docs/state.md#boot-gates); one
// owned by anyone else is refused with "state: state directory <dir> is
// not owned by this user" before anything in it is touched, its mode
// included.
func Open(dir string) (*Store, error) {
	if err := makeStateDir(dir); err != nil {
		return nil, err
	}
	if err := claimDir(dir); err != nil {
		return nil, err
	}
	return &Store{dir: dir}, nil
}

// OpenLocked is Open under dir's lock (LockDir), taken before anything
// in dir is touched: the directory is made if it is missing (the lock is
// held on the directory itself), then locked, and only then claimed and
// rid of the temporary files of crashed saves (RemoveLeftovers). So of
// two runtimes that open one new directory at once, the one refused
// ("state directory <dir> is in use by another runtime") has removed
// nothing, not even the temporary file of the other's first save. The
// caller unlocks the lock.
func OpenLocked(dir string) (*Store, *DirLock, error) {
	if err := makeStateDir(dir); err != nil {
		return nil, nil, err
	}
	lock, err := LockDir(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := claimDir(dir); err != nil {
		lock.Unlock()
		return nil, nil, err
	}
	s := &Store{dir: dir}
	s.RemoveLeftovers()
	return s, lock, nil
}

// RemoveLeftovers removes the temporary files that saves which crashed
// left in the directory. Only the holder of the directory's lock may
// call it: anyone else could remove the file of a save in progress.
func (s *Store) RemoveLeftovers() {
	stale, _ := filepath.Glob(filepath.Join(s.dir, tempPattern))
	for _, p := range stale {
		_ = os.Remove(p) // best effort: a leftover temp file is harmless
	}
}

// makeStateDir is MakeDir with the state fault of its failure.
func makeStateDir(dir string) error {
	if err := MakeDir(dir); err != nil {
		return fault.Errorf(fault.ClassState, "cannot create state directory %s: %w", dir, err)
	}
	return nil
}

// claimDir checks that the state directory dir belongs to the effective
// user and restricts it to DirMode. A directory Open has just made passes
// trivially (it may still lose bits to the umask, which this restores).
func claimDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fault.Errorf(fault.ClassState, "cannot read state directory %s: %w", dir, err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fault.Errorf(fault.ClassState, "cannot read the owner of state directory %s", dir)
	}
	if int64(st.Uid) != int64(os.Geteuid()) {
		return fault.Errorf(fault.ClassState, "state directory %s is not owned by this user", dir)
	}
	const special = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	if info.Mode().Perm() == DirMode && info.Mode()&special == 0 {
		return nil
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return fault.Errorf(fault.ClassState, "cannot restrict state directory %s to mode 0700: %w", dir, err)
	}
	return nil
}

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

// Path is the path of a file inside the state directory.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name) }

// Exists reports whether state.json exists in dir. It is an error for the
// path to exist as something other than a regular file.
func Exists(dir string) (bool, error) {
	path := filepath.Join(dir, StateFile)
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fault.Errorf(fault.ClassState, "cannot read state file %s: %w", path, err)
	case !info.Mode().IsRegular():
		return false, fault.Errorf(fault.ClassState, "state file %s is not a regular file", path)
	}
	return true, nil
}

// Load reads and checks state.json: it must parse, carry schema
// being-v1, and hold a valid budget. Load never writes.
func (s *Store) Load() (*Being, error) { return Load(s.dir) }

// Load reads state.json from dir without opening (or creating) the
// directory; see Store.Load. The file must be regular and at most
// MaxCheckpoint bytes (ReadCheckpoint).
func Load(dir string) (*Being, error) {
	path := filepath.Join(dir, StateFile)
	data, err := ReadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode parses the bytes of a state.json read from path (used only in
// error sentences).
func Decode(path string, data []byte) (*Being, error) {
	b := new(Being)
	versioned, err := b.decode(data)
	if err != nil || !versioned || b.SchemaVersion != SchemaVersion {
		// The head alone says why, in the order a reader expects: not
		// JSON, no schema, another schema, then any other defect.
		var head struct {
			SchemaVersion *string `json:"schema_version"`
		}
		if herr := json.Unmarshal(data, &head); herr != nil {
			return nil, fault.Errorf(fault.ClassState, "malformed state file %s: %w", path, herr)
		}
		if head.SchemaVersion == nil {
			return nil, fault.Errorf(fault.ClassState, "malformed state file %s: schema_version is missing", path)
		}
		if *head.SchemaVersion != SchemaVersion {
			return nil, fault.Errorf(fault.ClassState, "unsupported state schema %s", *head.SchemaVersion)
		}
		if err != nil {
			return nil, fault.Errorf(fault.ClassState, "malformed state file %s: %w", path, err)
		}
		// The head is fine after all (its key in another case, which
		// encoding/json matches): b is as decoded.
	}
	if err := b.Budget.Check(); err != nil {
		return nil, fault.Errorf(fault.ClassState, "malformed state file %s: %w", path, err)
	}
	return b, nil
}

// Check refuses a budget no ledger could have produced: any amount but
// remaining below zero.
func (b Budget) Check() error {
	for _, f := range []struct {
		name string
		v    interface{ Sign() int }
	}{{"starting", b.Starting}, {"api_spent", b.APISpent}, {"instance_spent", b.InstanceSpent}, {"earned", b.Earned}, {"granted", b.Granted}} {
		if f.v.Sign() < 0 {
			return fmt.Errorf("budget %s is negative", f.name)
		}
	}
	return nil
}

// Encode renders b as the pretty JSON of state.json, newline-terminated.
func Encode(b *Being) ([]byte, error) {
	compact, err := b.MarshalJSON() // direct: skips json.Marshal's re-validation pass
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(compact)+len(compact)/4)
	out = indentCompact(out, compact)
	return append(out, '\n'), nil
}

// Save replaces state.json atomically: a unique temporary file in the
// same directory is written, fsynced and renamed over state.json, then the
// directory is fsynced. A crash at any point leaves either the old or the
// new state, never a mixture; the file is mode 0600 either way.
func (s *Store) Save(b *Being) error {
	data, err := Encode(b)
	if err != nil {
		return fault.Errorf(fault.ClassState, "cannot encode state: %w", err)
	}
	return s.writeAtomic(data, false)
}

// WriteState replaces state.json atomically with data, a state already
// encoded by Encode (see Save).
func (s *Store) WriteState(data []byte) error { return s.writeAtomic(data, false) }

// WriteCheckpoint is WriteState for the checkpoints of a being that goes
// on while one is written (docs/state.md#the-cycle-end-checkpoint-in-run):
// they are written one at a time, and a checkpoint of an earlier
// generation than the one last written is skipped (reported as
// written), so state.json never goes back to an older checkpoint.
// Generations only order the checkpoints of one Store.
func (s *Store) WriteCheckpoint(data []byte, generation uint64) error {
	s.checkpointMu.Lock()
	defer s.checkpointMu.Unlock()
	if generation < s.written {
		return nil
	}
	if err := s.writeAtomic(data, false); err != nil {
		return err
	}
	s.written = generation
	return nil
}

// Create writes b as the first state.json of the directory. Unlike Save
// it refuses to replace an existing state, even one created by a racing
// process after the boot gates ran.
func (s *Store) Create(b *Being) error {
	data, err := Encode(b)
	if err != nil {
		return fault.Errorf(fault.ClassState, "cannot encode state: %w", err)
	}
	return s.writeAtomic(data, true)
}

func (s *Store) writeAtomic(data []byte, create bool) (err error) {
	final := s.Path(StateFile)
	if s.fault != nil {
		if err := s.fault(StateFile); err != nil {
			return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
		}
	}
	f, err := os.CreateTemp(s.dir, tempPattern)
	if err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp already uses 0600; say so explicitly so a future change of
	// the library default cannot widen the file.
	if err = f.Chmod(FileMode); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	if err = writeFile(f, data); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	if err = syncFile(f); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	if err = f.Close(); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	if create {
		// link fails if the name exists: the creation is exclusive.
		if err = linkFile(tmp, final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return alreadyExists(s.dir)
			}
			return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
		}
		_ = os.Remove(tmp)
	} else if err = renameFile(tmp, final); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	if err = syncDir(s.dir); err != nil {
		return fault.Errorf(fault.ClassState, "cannot save state %s: %w", final, err)
	}
	return nil
}
