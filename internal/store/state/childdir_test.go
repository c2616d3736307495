package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestChildDir: a child lives in its parent's children/<id> whatever its
// record says; a record is refused when it points anywhere else.
func TestChildDir(t *testing.T) {
	parent := "/families/a/state"
	want := "/families/a/state/children/1b2c"
	tests := []struct {
		name     string
		id, dir  string
		refused  bool
		resolved string
	}{
		{"relative, as recorded now", "1b2c", "children/1b2c", false, want},
		{"empty", "1b2c", "", false, want},
		{"absolute, of the family before it moved", "1b2c", "/old/place/state/children/1b2c", false, want},
		{"absolute, into another family", "1b2c", "/other/state/children/9z", true, ""},
		{"absolute, not a children directory", "1b2c", "/etc/1b2c", true, ""},
		{"an ancestor", "1b2c", "children/../..", true, ""},
		{"a sibling's", "1b2c", "children/9z", true, ""},
		{"an id that climbs", "..", "children/..", true, ""},
		{"an id with a separator", "a/b", "children/a/b", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChildDir(parent, Child{ID: tt.id, Name: "Bo", StateDir: tt.dir})
			if tt.refused {
				if !errors.Is(err, ErrChildOutside) {
					t.Fatalf("ChildDir = %q, %v; want ErrChildOutside", got, err)
				}
				return
			}
			if err != nil || got != tt.resolved {
				t.Fatalf("ChildDir = %q, %v; want %q", got, err, tt.resolved)
			}
		})
	}
}

// TestCheckChildDir refuses a child directory that is a link, and lets a
// missing one pass for the caller to report.
func TestCheckChildDir(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckChildDir(real); err != nil {
		t.Errorf("a directory: %v", err)
	}
	if err := CheckChildDir(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
	if err := CheckChildDir(link); err == nil {
		t.Error("a link passed")
	}
}
