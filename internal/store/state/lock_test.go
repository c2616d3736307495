package state

import (
	"errors"
	"os"
	"os/exec"
	"testing"

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
