package state

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/wisent/singularity/supervision/fault"
)

// TestLockDirIsExclusive: a locked state directory is refused to a second
// holder with the sentence of docs/state.md#one-runtime-per-directory
// (class state, exit 4), taking the lock writes nothing, and the lock is
// free again once let go.
func TestLockDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := LockDir(dir)
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = LockDir(dir)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second lock: %v, want ErrInUse", err)
	}
	if got, want := fault.Line(err), "singularity: state: state directory "+dir+" is in use by another runtime"; got != want {
		t.Errorf("refusal = %q, want %q", got, want)
	}
	if got := fault.ExitCode(err); got != 4 {
		t.Errorf("exit code %d, want 4", got)
	}
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("locking wrote into the directory: %v", after)
	}
	first.Unlock()
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again.Unlock()
	var none *DirLock
	none.Unlock() // a nil lock has nothing to let go
}

// TestLockDirIsNotInherited: a child process started while the lock is
// held does not keep it: once its holder lets go, the directory can be
// locked again while the child still runs (a Las process must not keep a
// killed runtime's directory locked).
func TestLockDirIsNotInherited(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	l.Unlock()
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("the child kept the lock: %v", err)
	}
	again.Unlock()
}

// TestLockDirOfMissingDirectory names the directory it cannot read.
func TestLockDirOfMissingDirectory(t *testing.T) {
	dir := t.TempDir() + "/missing"
	_, err := LockDir(dir)
	if err == nil || fault.ClassOf(err) != fault.ClassState {
		t.Fatalf("err = %v, want a state error", err)
	}
}

// TestOpenLockedLocksBeforeTouching: OpenLocked makes a missing
// directory and holds its lock; on a directory another holds it is
// refused with ErrInUse and leaves a save's temporary file where it is,
// and once the lock is free it removes the leftover.
func TestOpenLockedLocksBeforeTouching(t *testing.T) {
	dir := t.TempDir() + "/new/being"
	store, lock, err := OpenLocked(dir)
	if err != nil {
		t.Fatalf("open a new directory: %v", err)
	}
	if store.Dir() != dir {
		t.Fatalf("store dir %s, want %s", store.Dir(), dir)
	}
	temp := dir + "/." + StateFile + ".7.tmp"
	if err := os.WriteFile(temp, []byte("{}"), FileMode); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLocked(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the holder's temporary file was touched: %v", err)
	}
	lock.Unlock()
	_, again, err := OpenLocked(dir)
	if err != nil {
		t.Fatalf("open once free: %v", err)
	}
	defer again.Unlock()
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover of a crashed save is still there: %v", err)
	}
}

// TestLockDirWaitsForABriefHolder: a holder that lets go within
// LockGrace (an operator's fund or say writing its one step) is waited
// for, not refused; one that holds on is refused once the grace passes.
func TestLockDirWaitsForABriefHolder(t *testing.T) {
	dir := t.TempDir()
	brief, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The holder lets go while LockDir is asking (without the grace it
	// would be refused at once).
	time.AfterFunc(LockGrace/5, brief.Unlock)
	l, err := LockDir(dir)
	if err != nil {
		t.Fatalf("a holder that let go within the grace: %v", err)
	}
	l.Unlock()

	held, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	start := time.Now()
	if _, err := LockDir(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("a holder that holds on: %v, want ErrInUse", err)
	}
	if waited := time.Since(start); waited < LockGrace {
		t.Errorf("refused after %v, before the grace of %v", waited, LockGrace)
	}
}
