package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// Every step that makes a write durable goes through the functions of
// this file: the data written, the file's fsync, the rename or link that
// publishes it, and the fsync of its directory
// (docs/state.md#atomic-save). The package's tests watch them to
// check the order of each kind of write, so that a missing fsync fails a
// test instead of passing unseen.

// durableOp is one step of a durable write.
type durableOp string

const (
	opWrite    durableOp = "write"
	opTruncate durableOp = "truncate"
	opSync     durableOp = "fsync"
	opRename   durableOp = "rename"
	opLink     durableOp = "link"
	opMkdir    durableOp = "mkdir"
	opSyncDir  durableOp = "fsync dir"
)

// watcher, when set, is told of every step that succeeded, with the
// file's path. It is the window this package's own tests have on the
// order of the steps (watchDurability in durability_test.go); nothing
// outside the package can set it, and in a running process it stays nil.
var watcher atomic.Pointer[func(op durableOp, path string)]

// done reports a step that succeeded.
func done(op durableOp, path string) {
	if watch := watcher.Load(); watch != nil {
		(*watch)(op, path)
	}
}

// writeFile writes data to f in one write.
func writeFile(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	done(opWrite, f.Name())
	return nil
}

// writeFileAt writes data to f at off in one write (a file written in
// place).
func writeFileAt(f *os.File, data []byte, off int64) error {
	if _, err := f.WriteAt(data, off); err != nil {
		return err
	}
	done(opWrite, f.Name())
	return nil
}

// syncFile makes f's data durable.
func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	done(opSync, f.Name())
	return nil
}

// truncateFile cuts f to size (a torn line, a partial append).
func truncateFile(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	done(opTruncate, f.Name())
	return nil
}

// renameFile publishes from as to.
func renameFile(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	done(opRename, to)
	return nil
}

// linkFile publishes from as to, refusing an existing to.
func linkFile(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	done(opLink, to)
	return nil
}

// syncDir makes a directory's entries (a rename, a new file, a removal)
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		done(opSyncDir, dir)
	}
	return err
}

// MakeDir makes dir, and every missing parent, with mode DirMode, and
// fsyncs the directory that received each new entry: a state directory
// or a child's directory made is then as durable as the files written in
// it (a power loss cannot take the directory away from under a state.json
// that was fsynced). A dir that exists is left as it is; one that is not
// a directory is an error.
func MakeDir(dir string) error {
	dir = filepath.Clean(dir)
	info, err := os.Stat(dir)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MakeDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return MakeDir(dir) // made meanwhile; it must be a directory
		}
		return err
	}
	done(opMkdir, dir)
	return syncDir(parent)
}
