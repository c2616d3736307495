// Package testbin builds the project's binaries once per test process so
// black-box tests can run them as real child processes.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Build compiles the main package at pkg (an import path below the module,
// such as "./cmd/singularity") and returns the binary's path. The binary
// is built once per test process and removed by Cleanup.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if path, ok := built[pkg]; ok {
		return path
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "singularity-bin-")
		if err != nil {
			t.Fatalf("temp dir for binaries: %v", err)
		}
		dir = d
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ModuleRoot(t)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, output)
	}
	built[pkg] = out
	return out
}

// Cleanup removes every binary built by this process; call it from
// TestMain after the tests ran.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// ModuleRoot is the directory holding go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the module root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Main runs a test binary's tests and removes the binaries they built;
// call it as the whole body of TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
