package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wisent/singularity/supervision/fault"
)

// ChildrenDir is the directory of a being's children, inside its own.
const ChildrenDir = "children"

// ChildRecordDir is the state_dir a child's record holds: its directory
// relative to its parent's (docs/state.md#child-directories), so a family
// that is moved or restored elsewhere finds its children where it is.
func ChildRecordDir(id string) string { return filepath.Join(ChildrenDir, id) }

// ErrChildOutside reports a child record or grant whose directory is not
// its parent's children/<id>.
var ErrChildOutside = errors.New("is not a directory of its parent's children/")

// ChildDir is where the child of record c lives, given its parent's
// directory: always parent/children/<id>, whatever the record says, so a
// copy of a family never reaches into the original's children. The
// record is checked, never followed: its id must be one path element,
// and its state_dir empty, children/<id> (this runtime's records) or an
// absolute path ending in children/<id> (older records, written before
// records were relative, which the family may have been moved from). A
// record that points anywhere else is refused with "state: child <name>:
// state_dir <dir> is not a directory of its parent's children/".
func ChildDir(parent string, c Child) (string, error) {
	if !oneElement(c.ID) {
		return "", fault.Errorf(fault.ClassState, "child %s: id %q %w", c.Name, c.ID, ErrChildOutside)
	}
	want := ChildRecordDir(c.ID)
	switch rec := c.StateDir; {
	case rec == "":
	case filepath.IsAbs(rec):
		clean := filepath.Clean(rec)
		if filepath.Base(clean) != c.ID || filepath.Base(filepath.Dir(clean)) != ChildrenDir {
			return "", fault.Errorf(fault.ClassState, "child %s: state_dir %s %w", c.Name, rec, ErrChildOutside)
		}
	case filepath.Clean(rec) != want:
		return "", fault.Errorf(fault.ClassState, "child %s: state_dir %s %w", c.Name, rec, ErrChildOutside)
	}
	return filepath.Join(parent, want), nil
}

// CheckChildDir refuses a child directory that is a symbolic link (it
// could lead to an ancestor, or to another family): "state: child
// directory <dir> is a symbolic link". A directory that does not exist
// passes; the caller reports it.
func CheckChildDir(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fault.Errorf(fault.ClassState, "cannot read child directory %s: %w", dir, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return fault.Errorf(fault.ClassState, "child directory %s is a symbolic link", dir)
	}
	return nil
}

// oneElement reports whether id names one entry of a directory: not
// empty, not . or .., no separator.
func oneElement(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsRune(id, filepath.Separator) && !strings.ContainsRune(id, '/')
}

// RemoveUngranted removes the directories in parent's children/ that b
// accounts for by neither a grant nor a child record (Ungranted), and
// returns their names. The removal is durable when it returns: the
// children/ directory is fsynced once anything was removed, so a child
// directory made after it cannot come back beside a removed one after a
// power loss. A parent without children/ has nothing to remove. An error
// leaves the names removed so far in removed.
func RemoveUngranted(parent string, b *Being) (removed []string, err error) {
	root := filepath.Join(parent, ChildrenDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil // no children/ yet
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	for _, name := range b.Ungranted(dirs) {
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			return removed, err
		}
		removed = append(removed, name)
	}
	if len(removed) > 0 {
		return removed, syncDir(root)
	}
	return removed, nil
}
