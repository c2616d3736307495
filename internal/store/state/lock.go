package state

import (
	"errors"
	"os"
	"syscall"

	"github.com/wisent/singularity/supervision/fault"
)

// DirLock is a runtime's exclusive hold on a state directory
// (docs/state.md#one-runtime-per-directory): while one runtime holds it,
// another that tries to live in the directory is refused. It is an
// flock(2) of the directory itself, so taking it writes nothing, and the
// kernel drops it when the holder dies, however it dies. It is not
// inherited by child processes (the descriptor is close-on-exec).
type DirLock struct{ f *os.File }

// ErrInUse is the reason LockDir refuses a directory another runtime
// holds.
var ErrInUse = errors.New("in use by another runtime")

// LockDir takes the exclusive lock of dir without waiting: "state:
// state directory <dir> is in use by another runtime" (exit 4) when
// another runtime holds it. The lock is also refused to a second holder
// in the same process.
func LockDir(dir string) (*DirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read state directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fault.Errorf(fault.ClassState, "state directory %s is %w", dir, ErrInUse)
		}
		return nil, fault.Errorf(fault.ClassState, "cannot lock state directory %s: %w", dir, err)
	}
	return &DirLock{f: f}, nil
}

// Unlock lets the directory go; a nil lock has nothing to let go.
func (l *DirLock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Close() // closing the only descriptor drops the flock
	l.f = nil
}
