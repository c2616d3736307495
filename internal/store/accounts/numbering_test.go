package accounts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// journalDir is a being whose journal holds three one-event steps, with
// its checkpoint left at the start (every event lies past it).
func journalDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	one := testkit.USD("1")
	id := state.Identity{AgentID: "agent-test", Name: "Ada"}
	st := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusRunning,
		Budget: state.Budget{Starting: one, Remaining: one}, JournalSeq: new(uint64)}
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	if err != nil {
		t.Fatal(err)
	}
	at := state.Now()
	j, err := store.OpenJournal(at, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, text := range []string{"a", "b", "c"} {
		if _, err := j.AppendStep([]state.Event{state.Warning(at, 0, text)}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMisnumberedJournalIsNotExact: a journal whose seqs do not run 1,
// 2, 3, … (two runtimes appended to it, or a line was lost) makes the
// being's ledger and the family's "not exact", though every sum agrees.
func TestMisnumberedJournalIsNotExact(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(lines [][]byte) [][]byte
		being string // the problem, "" when the journal is well numbered
	}{
		{"well numbered", func(l [][]byte) [][]byte { return l }, ""},
		{"a seq twice", func(l [][]byte) [][]byte { return append(l[:2:2], l[1], l[2]) }, "journal repeats seq 2 after seq 2"},
		{"a seq going back", func(l [][]byte) [][]byte { return [][]byte{l[0], l[2], l[1]} }, "journal lacks seq 2 (seq 3 follows seq 1)"},
		{"a seq missing", func(l [][]byte) [][]byte { return [][]byte{l[0], l[2]} }, "journal lacks seq 2 (seq 3 follows seq 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := journalDir(t)
			path := filepath.Join(dir, state.JournalFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			for i := range lines {
				lines[i] = append(bytes.TrimSuffix(lines[i], []byte("\n")), '\n')
			}
			if err := os.WriteFile(path, bytes.Join(tc.edit(lines), nil), 0o600); err != nil {
				t.Fatal(err)
			}
			fam, err := accounts.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			b := fam.Beings[0]
			if tc.being == "" {
				if b.Journal != nil || fam.Verdict() != "exact" {
					t.Fatalf("journal %v, verdict %q; want none and exact", b.Journal, fam.Verdict())
				}
				return
			}
			if b.Journal == nil || b.Journal.Error() != tc.being {
				t.Fatalf("journal problem %v, want %q", b.Journal, tc.being)
			}
			if got := fam.Verdict(); !strings.HasPrefix(got, "not exact: Ada's "+tc.being) {
				t.Errorf("family verdict %q", got)
			}
			if fam.Totals.Verdict() != "exact" {
				t.Errorf("the sums alone agree (%s): only the numbering shows the fault", fam.Totals.Verdict())
			}
		})
	}
}
