package state

import (
	"errors"
	"os"
	"syscall"
	"time"

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

// LockGrace is how long LockDir waits for the holder of a directory to
// let it go before it refuses: an operator's `fund` or `say` holds a
// directory no runtime lives in for the one step it writes
// (docs/state.md#one-runtime-per-directory), and a runtime that starts
// in the meantime waits for it instead of failing.
const LockGrace = 500 * time.Millisecond

// LockDir takes the exclusive lock of dir, waiting up to LockGrace for
// a holder to let it go: "state: state directory <dir> is in use by
// another runtime" (exit 4) when another runtime holds it still. The
// lock is also refused to a second holder in the same process.
func LockDir(dir string) (*DirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read state directory %s: %w", dir, err)
	}
	deadline := time.Now().Add(LockGrace)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return &DirLock{f: f}, nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, fault.Errorf(fault.ClassState, "cannot lock state directory %s: %w", dir, err)
		case time.Until(deadline) <= 0:
			f.Close()
			return nil, fault.Errorf(fault.ClassState, "state directory %s is %w", dir, ErrInUse)
		}
		time.Sleep(min(wait, time.Until(deadline)))
	}
}

// Unlock lets the directory go; a nil lock has nothing to let go.
func (l *DirLock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Close() // closing the only descriptor drops the flock
	l.f = nil
}
