package state

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// watchDurability records every durable step of the package's writes
// until the test ends, as "op name" with the file's base name (a
// checkpoint's temporary file as <tmp>).
func watchDurability(t *testing.T) func() []string {
	t.Helper()
	var mu sync.Mutex
	var ops []string
	watch := func(op durableOp, path string) {
		name := filepath.Base(path)
		if strings.HasSuffix(name, ".tmp") {
			name = "<tmp>"
		}
		mu.Lock()
		ops = append(ops, string(op)+" "+name)
		mu.Unlock()
	}
	if !watcher.CompareAndSwap(nil, &watch) {
		t.Fatal("another test watches the durable steps")
	}
	t.Cleanup(func() { watcher.Store(nil) })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := ops
		ops = nil
		return out
	}
}

// TestDurableWriteOrder: each kind of durable write makes its steps in
// the order docs/state.md#atomic-save and docs/state.md#the-journal give
// — the data, its fsync, the rename or link that publishes it, the
// directory's fsync. Every fsync of the package is one of these steps, so
// removing any of them fails this test (the call sites: syncFile in
// writeAtomic, appendLines and the eager repair of openAppend; syncDir in
// writeAtomic, openAppend's creation, MakeDir and RemoveUngranted).
func TestDurableWriteOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	ops := watchDurability(t)
	id := Identity{AgentID: "agent-test", Name: "Ada"}
	one := money.FromInt(1)
	fresh := &Being{SchemaVersion: SchemaVersion, Identity: id, Status: StatusStarting,
		Budget: Budget{Starting: one, Remaining: one}, StartedAt: Now(), UpdatedAt: Now(), JournalSeq: new(uint64)}

	store, b, _, err := Boot(dir, false, id, func() (*Being, error) { return fresh, nil })
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Base(filepath.Dir(dir))
	expect(t, "a fresh state directory and its first state.json (exclusive)", ops(),
		"mkdir state", "fsync dir "+parent, "write <tmp>", "fsync <tmp>", "link state.json", "fsync dir state")

	j, err := store.OpenJournal(Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	expect(t, "a new journal", ops(), "fsync dir state")

	if _, err := j.AppendStep([]Event{Warning(Now(), 0, "a")}); err != nil {
		t.Fatal(err)
	}
	expect(t, "a journal step", ops(), "write activity.jsonl", "fsync activity.jsonl")

	if err := store.Save(b); err != nil {
		t.Fatal(err)
	}
	expect(t, "a checkpoint", ops(), "write <tmp>", "fsync <tmp>", "rename state.json", "fsync dir state")

	a, err := store.OpenArchive()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ops() // the archive's creation
	if err := a.Append(chat.Message{Role: chat.RoleUser, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	expect(t, "an archive append", ops(), "write "+ArchiveFile, "fsync "+ArchiveFile)

	if err := j.Rotate(); err != nil {
		t.Fatal(err)
	}
	expect(t, "a rotation", ops(), "rename activity-1.jsonl", "fsync dir state")

	if err := MakeDir(filepath.Join(dir, "children", "c1")); err != nil {
		t.Fatal(err)
	}
	expect(t, "a child's directory", ops(), "mkdir children", "fsync dir state", "mkdir c1", "fsync dir children")
	removed, err := RemoveUngranted(dir, b)
	if err != nil || len(removed) != 1 || removed[0] != "c1" {
		t.Fatalf("RemoveUngranted: %q, %v; want [c1]", removed, err)
	}
	expect(t, "the removal of a directory without a grant", ops(), "fsync dir children")
	if removed, err = RemoveUngranted(dir, b); err != nil || len(removed) != 0 {
		t.Fatalf("RemoveUngranted again: %q, %v; want none", removed, err)
	}
	expect(t, "nothing left to remove", ops())
	if err := MakeDir(filepath.Join(dir, "children", "c1")); err != nil {
		t.Fatal(err)
	}
	ops()
	if err := MakeDir(filepath.Join(dir, "children", "c1")); err != nil {
		t.Fatal(err)
	}
	expect(t, "a directory that exists", ops())
	if err := MakeDir(filepath.Join(dir, StateFile)); err == nil {
		t.Error("MakeDir over a file: no error")
	}
}

// TestTornLineRepairIsDurable: the eager repair of a torn last line cuts
// it and fsyncs the cut before the journal is used.
func TestTornLineRepairIsDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	if err := os.WriteFile(path, []byte(`{"type":"warning","seq":1}`+"\n"+`{"type":"cyc`), 0o600); err != nil {
		t.Fatal(err)
	}
	ops := watchDurability(t)
	j, err := OpenJournal(path, Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	got := ops()
	if len(got) < 2 || got[0] != "truncate "+JournalFile || got[1] != "fsync "+JournalFile {
		t.Fatalf("repair steps %q, want truncate then fsync first", got)
	}
}

func expect(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("%s: steps %q, want %q", what, got, want)
	}
}
