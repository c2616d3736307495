package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// TestMakeInstallPutsBothBinariesSideBySide: `make install` with PREFIX
// writes singularity and singularity-keeper into PREFIX/bin, and with
// GOBIN into GOBIN; both run --version and report the same revision, so
// the runtime finds the keeper of its own build beside it.
func TestMakeInstallPutsBothBinariesSideBySide(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("make is not installed: %v", err)
	}
	t.Parallel()
	root := testkit.ModuleRoot(t)
	tests := []struct {
		name string
		env  func(dir string) []string // added to the environment
		args func(dir string) []string // added to make's arguments
		bin  func(dir string) string   // where the binaries go
	}{
		{"PREFIX", func(string) []string { return nil }, func(dir string) []string { return []string{"PREFIX=" + dir} },
			func(dir string) string { return filepath.Join(dir, "bin") }},
		{"GOBIN", func(dir string) []string { return []string{"GOBIN=" + dir} }, func(string) []string { return nil },
			func(dir string) string { return dir }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("make", append([]string{"-C", root, "install"}, tt.args(dir)...)...)
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "PREFIX=") && !strings.HasPrefix(kv, "GOBIN=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(env, tt.env(dir)...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			bin := tt.bin(dir)
			version := func(name string) string {
				t.Helper()
				out, err := exec.Command(filepath.Join(bin, name), "--version").Output()
				require.NoError(t, err, name)
				return strings.TrimSpace(string(out))
			}
			runtime, keeper := version("singularity"), version("singularity-keeper")
			rev := regexp.MustCompile(`^singularity \S+ \(revision ([^,)]+)`).FindStringSubmatch(runtime)
			require.NotNil(t, rev, runtime)
			assert.Equal(t, "singularity-keeper (revision "+rev[1]+")", keeper, "the keeper of the same build")
		})
	}
}
