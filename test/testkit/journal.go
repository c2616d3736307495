package testkit

import (
	"path/filepath"
	"testing"

	"github.com/wisent/singularity/internal/store/state"
)

// JournalPath is the activity journal of the being whose state directory
// is stateDir.
func JournalPath(stateDir string) string { return filepath.Join(stateDir, state.JournalFile) }

// Journal reads the activity journal of the being whose state directory
// is stateDir, failing t if it cannot be read whole.
func Journal(t testing.TB, stateDir string) []state.Event {
	t.Helper()
	events, err := state.ReadJournal(JournalPath(stateDir))
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	return events
}

// Count is how many of events are of type typ (state.EventStarted, …).
func Count(events []state.Event, typ string) int {
	return CountWhere(events, func(e state.Event) bool { return e.Type == typ })
}

// CountWhere is how many of events satisfy match.
func CountWhere(events []state.Event, match func(state.Event) bool) int {
	n := 0
	for _, e := range events {
		if match(e) {
			n++
		}
	}
	return n
}

// Types lists the events' types, in order.
func Types(events []state.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// BootedDir writes a fresh being's state directory (Identity, 10 USD,
// journal seq 0) under a temporary directory and returns it.
func BootedDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	id := Identity()
	ten := USD("10")
	fresh := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusStarting,
		Budget: state.Budget{Starting: ten, Remaining: ten}, StartedAt: state.Now(), UpdatedAt: state.Now(), JournalSeq: new(uint64)}
	if _, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return fresh, nil }); err != nil {
		t.Fatal(err)
	}
	return dir
}
