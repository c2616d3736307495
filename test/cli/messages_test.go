package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
)

// TestInitRefusesWhatRunWould: init refuses, with one sentence about
// the value and exit 2, a base URL run would refuse, a key file that is
// not there and a negative price given as the next argument; it writes
// nothing then.
func TestInitRefusesWhatRunWould(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	key := filepath.Join(keys, "openai.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-test-key\n"), 0o600))
	missing := filepath.Join(keys, "missing.key")
	badURL := "configuration: init: --base-url must be an http or https URL, as https://api.openai.com/v1"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an ftp base URL", []string{"--base-url", "ftp://example.com/v1", "--key-file", key}, badURL},
		{"no URL at all", []string{"--base-url", "::not a url::", "--key-file", key}, badURL},
		{"a URL without a host", []string{"--base-url", "https:///v1", "--key-file", key}, badURL},
		{"a missing key file", []string{"--base-url", "https://example.com/v1", "--key-file", missing},
			"secret file: " + missing + ": no such file or directory"},
		{"a negative price after a space", []string{"--base-url", "https://example.com/v1", "--key-file", key, "--prices", "-1,1"},
			`configuration: init: --prices: model "m": input_usd_per_million cannot be negative`},
		{"a flag where the prices go", []string{"--base-url", "https://example.com/v1", "--key-file", key, "--prices", "--auth", "bearer"},
			"configuration: --prices: must be INPUT,OUTPUT (USD per million tokens)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "being")
			r := run(t, map[string]string{}, append([]string{"init", dir, "--model", "m"}, tc.args...)...)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Equal(t, "singularity: "+tc.want+"\n", r.stderr)
			assert.Empty(t, r.stdout)
			assert.NoDirExists(t, dir, "nothing was written")
		})
	}
	dir := filepath.Join(t.TempDir(), "being")
	r := run(t, map[string]string{}, "init", dir, "--model", "m", "--base-url", "http://localhost:8080/v1", "--key-file", key, "--prices", "0.15,0.6")
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(dir, "singularity.toml"))
}

// TestUnreadableChildIsOneSentence: a child that cannot be read (a
// record pointing out of the family, a state.json that is a FIFO) makes
// status and journal alike end with exit 4 and one sentence naming the
// child once, prefixed once.
func TestUnreadableChildIsOneSentence(t *testing.T) {
	t.Parallel()
	sandbox := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", sandbox)
	require.Equal(t, 0, demo.code, demo.stderr)
	root, err := state.Load(filepath.Join(sandbox, "state"))
	require.NoError(t, err)
	require.NotEmpty(t, root.Mind.Children)
	child := root.Mind.Children[0]

	cases := []struct {
		name  string
		spoil func(t *testing.T, stateDir string)
		want  func(stateDir string) string
	}{
		{"a record pointing to /etc", func(t *testing.T, stateDir string) {
			editRoot(t, filepath.Dir(stateDir), func(string) string { return "/etc" })
		}, func(string) string {
			return "state: child " + child.Name + ": state_dir /etc is not a directory of its parent's children/"
		}},
		{"a child's state.json that is a FIFO", func(t *testing.T, stateDir string) {
			path := filepath.Join(stateDir, "children", child.ID, state.StateFile)
			require.NoError(t, os.Remove(path))
			fifo(t, path)
		}, func(stateDir string) string {
			return "state: child " + child.Name + ": state file " + filepath.Join(stateDir, "children", child.ID, state.StateFile) + " is not a regular file"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			copied := filepath.Join(t.TempDir(), "family")
			require.NoError(t, os.CopyFS(copied, os.DirFS(sandbox)))
			stateDir := filepath.Join(copied, "state")
			tc.spoil(t, stateDir)
			for _, args := range [][]string{
				{"status", "--state-dir", stateDir},
				{"status", "--state-dir", stateDir, "--format", "json"},
				{"journal", "--state-dir", stateDir},
				{"journal", "--state-dir", stateDir, "--follow"},
			} {
				r := runWithin(t, 30*time.Second, args...)
				assert.Equal(t, 4, r.code, "%v: %s", args, r.stderr)
				assert.Equal(t, "singularity: "+tc.want(stateDir)+"\n", r.stderr, "%v", args)
			}
			st := status(t, stateDir, "--format", "json")
			assert.Equal(t, []string{strings.TrimPrefix(tc.want(stateDir), "state: ")}, parseStatus(t, st.stdout).Unreadable,
				"the JSON lists the child once, without the class")
		})
	}
}
