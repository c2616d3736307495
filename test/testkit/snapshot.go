package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Entry is one file or directory of a Snapshot.
type Entry struct {
	Mode fs.FileMode
	Data string // a regular file's content
}

// Snapshot records every file and directory below dir (dir itself
// included, as "."), with its mode and, for regular files, its bytes, so
// a test can show that something left a directory exactly as it was. A
// missing dir is the empty snapshot.
func Snapshot(t testing.TB, dir string) map[string]Entry {
	t.Helper()
	out := map[string]Entry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == dir {
				return filepath.SkipAll
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		e := Entry{Mode: info.Mode()}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.Data = string(data)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}
