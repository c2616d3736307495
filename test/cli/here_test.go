package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// runIn is run from the directory dir.
func runIn(t *testing.T, dir string, env map[string]string, args ...string) result {
	t.Helper()
	cmd := exec.Command(testkit.Singularity(t), args...)
	cmd.Env, cmd.Dir = testkit.Environ(env), dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := testkit.ExitCode(t, cmd.Run())
	return result{stdout.String(), stderr.String(), code}
}

// noConfigurationHere is the refusal of a command with no configuration.
const noConfigurationHere = "singularity: configuration: no configuration found here: run singularity init, or pass --config FILE\n"

// TestNothingHereSaysInit is a new user's first command in an empty
// directory with no variable at all: every command that needs a
// configuration says where to get one, exit 2, and prints nothing else.
func TestNothingHereSaysInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, command := range []string{"once", "run", "doctor", "status", "journal", "tools"} {
		r := runIn(t, dir, map[string]string{"PATH": os.Getenv("PATH")}, command)
		assert.Equal(t, 2, r.code, command)
		assert.Equal(t, noConfigurationHere, r.stderr, command)
		assert.Empty(t, r.stdout, command)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written")
}

// TestConfigurationFoundHere: in the directory init wrote, every command
// reads ./singularity.toml without --config and says so in one info
// line; status and journal find the state directory from it; --config
// and SINGULARITY_CONFIG still come first, and SINGULARITY_CONFIG="" names
// no file.
func TestConfigurationFoundHere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"PATH": os.Getenv("PATH")}
	in := runIn(t, dir, env, "init", ".", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--auth", "none", "--prices", "0,0")
	require.Equal(t, 0, in.code, in.stderr)
	file := filepath.Join(dir, "singularity.toml")

	values, sources := effectiveIn(t, dir, env)
	assert.Equal(t, filepath.Join(dir, "state"), values["state-dir"])
	assert.Equal(t, "file "+file, sources["state-dir"])
	r := runIn(t, dir, env, "config")
	found := strings.Count(r.stderr, "reading the file found here")
	assert.Equal(t, 1, found, r.stderr)
	assert.Contains(t, r.stderr, "level=INFO", r.stderr)
	assert.Contains(t, r.stderr, file, r.stderr)

	// The demo's family stands in for a being's state directory.
	demo := runIn(t, dir, env, "demo", "--cycles", "1", "--dir", filepath.Join(dir, "demo"))
	require.Equal(t, 0, demo.code, demo.stderr)
	require.NoError(t, os.Rename(filepath.Join(dir, "demo", "state"), filepath.Join(dir, "state")))
	st := runIn(t, dir, env, "status", "--format", "json")
	require.Equal(t, 0, st.code, st.stderr)
	assert.NotEmpty(t, parseStatus(t, st.stdout).Beings)
	jr := runIn(t, dir, env, "journal", "--tail", "1")
	require.Equal(t, 0, jr.code, jr.stderr)
	assert.Equal(t, 1, strings.Count(jr.stdout, "\n"), jr.stdout)

	other := filepath.Join(t.TempDir(), "other.toml")
	require.NoError(t, os.WriteFile(other, []byte("state-dir = \"elsewhere\"\n"), 0o600))
	values, _ = effectiveIn(t, dir, env, "--config", other)
	assert.Equal(t, filepath.Join(filepath.Dir(other), "elsewhere"), values["state-dir"])
	values, _ = effectiveIn(t, dir, map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_CONFIG": other})
	assert.Equal(t, filepath.Join(filepath.Dir(other), "elsewhere"), values["state-dir"])
	values, sources = effectiveIn(t, dir, map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_CONFIG": ""})
	assert.Equal(t, ".singularity", values["state-dir"])
	assert.Equal(t, "default", sources["state-dir"])
}

// TestEnvironmentOnlyPathUnchanged: outside any configuration, the
// seed's variables alone still configure a being (its refusals are its
// own, not the missing file's).
func TestEnvironmentOnlyPathUnchanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	env := w.env()
	env["BRAMA_TEMPERATURE"] = "3"
	r := runIn(t, t.TempDir(), env, "doctor")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "singularity: configuration: BRAMA_TEMPERATURE: temperature must be finite and between zero and two\n", r.stderr)
}

// effectiveIn is effective run from dir.
func effectiveIn(t *testing.T, dir string, env map[string]string, args ...string) (map[string]string, map[string]string) {
	t.Helper()
	r := runIn(t, dir, env, append([]string{"config"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	values, sources := map[string]string{}, map[string]string{}
	for _, m := range configLine.FindAllStringSubmatch(r.stdout, -1) {
		values[m[1]] = strings.Trim(m[2], `"`)
		sources[m[1]] = m[3]
	}
	require.NotEmpty(t, values, r.stdout)
	return values, sources
}
