package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// TestMakeBuildEmbedsRevision: the binary `make build` links reports the
// checkout's revision and commit time with --version even when GOFLAGS
// says -buildvcs=false (docs/configuration.md#commands). The test runs the
// Makefile's own command for the singularity binary.
func TestMakeBuildEmbedsRevision(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root := testkit.ModuleRoot(t)
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("not a git checkout: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	rev := git("rev-parse", "HEAD")
	bin := t.TempDir()
	plan := exec.Command("make", "-s", "-n", "build", "BIN="+bin)
	plan.Dir = root
	out, err := plan.Output()
	require.NoError(t, err)
	line, _, _ := strings.Cut(string(out), "\n")
	require.Contains(t, line, "-X main.revision="+rev, "the first build line embeds the revision")
	require.True(t, strings.HasSuffix(line, " ./cmd/..."), line)
	line = strings.TrimSuffix(line, "./cmd/...") + "./cmd/singularity"

	build := exec.Command("sh", "-c", line)
	build.Dir = root
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	version, err := exec.Command(filepath.Join(bin, "singularity"), "--version").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^singularity \S+ \(revision `+rev+`(, modified)?, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\n$`, string(version))
}
