package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// configLine is one option of `singularity config`: key, quoted value,
// source.
var configLine = regexp.MustCompile(`(?m)^([a-z0-9-]+) = ("[^"]*"|true|false) # (.*)$`)

// effective runs `singularity config` and returns each option's value
// (unquoted) and source.
func effective(t *testing.T, env map[string]string, args ...string) (map[string]string, map[string]string) {
	t.Helper()
	return effectiveIn(t, "", env, args...)
}

// TestConfigFilePrecedence: a flag beats its environment variable, which
// beats the configuration file, which beats the default; a relative path
// in the file is the file's directory's; the file is named by --config
// or SINGULARITY_CONFIG; tables only group keys.
func TestConfigFilePrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "singularity.toml")
	require.NoError(t, os.WriteFile(file, []byte(`# an operator's file
context-messages = 150
cycle-interval-secs = 2.5
state-dir = "beings"
las-only = ["echo", "finance"]

[brama]
brama-model = "from-file"
brama-max-tokens = 1024
brama-api-key-file = "/etc/singularity/key"

[loop]
resume = true
`), 0o600))
	env := map[string]string{"BRAMA_MAX_TOKENS": "512"}
	values, sources := effective(t, env, "--config", file, "--brama-model", "from-flag")
	for key, want := range map[string][2]string{
		"brama-model":         {"from-flag", "flag"},
		"brama-max-tokens":    {"512", "env BRAMA_MAX_TOKENS"},
		"context-messages":    {"150", "file " + file},
		"cycle-interval-secs": {"2.5", "file " + file},
		"state-dir":           {filepath.Join(dir, "beings"), "file " + file},
		"las-only":            {"echo,finance", "file " + file},
		"brama-api-key-file":  {"/etc/singularity/key", "file " + file},
		"resume":              {"true", "file " + file},
		"prompt-layout":       {"seed", "default"},
		"family-tools":        {"false", "unset"},
	} {
		assert.Equal(t, want[0], values[key], key)
		assert.Equal(t, want[1], sources[key], key)
	}

	byEnv, sourcesByEnv := effective(t, map[string]string{"SINGULARITY_CONFIG": file})
	assert.Equal(t, "from-file", byEnv["brama-model"])
	assert.Equal(t, "file "+file, sourcesByEnv["brama-model"])

	plain, plainSources := effective(t, map[string]string{})
	assert.Equal(t, "200", plain["context-messages"])
	assert.Equal(t, "default", plainSources["context-messages"])
}

// TestConfigFileRefusals: each refusal of a configuration file is one
// sentence naming the file, exit 2, before anything runs or is written.
func TestConfigFileRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := writer(t, dir)
	missing := filepath.Join(dir, "missing.toml")
	cases := []struct {
		name, path, want string
	}{
		{"missing", missing, "singularity: configuration: " + missing + ": no such file or directory"},
		{"unknown key", write("unknown.toml", "disabled = true\n"), "unknown key disabled"},
		{"unknown key in a table", write("table.toml", "[brama]\nbrama-api-key = \"sk-1\"\n"), "unknown key brama.brama-api-key"},
		{"a command's argument", write("format.toml", "format = \"json\"\n"), "unknown key format"},
		{"not TOML", write("bad.toml", "state-dir = \n"), "line 1: expected value but found '\\n' instead"},
		{"a key twice", write("twice.toml", "state-dir = \"a\"\n[x]\nstate-dir = \"b\"\n"), "key state-dir is given twice"},
		{"a date", write("date.toml", "stimulus = 2026-12-02\n"), "stimulus: a date is no option's value"},
		{"a list of lists", write("lists.toml", "las-only = [[\"a\"]]\n"), "las-only: a list of lists is no option's value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"config", "--config", tc.path}, {"once", "--config", tc.path}, {"status", "--config=" + tc.path}} {
				r := run(t, map[string]string{}, args...)
				assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
				line := strings.TrimSpace(r.stderr)
				assert.True(t, strings.HasPrefix(line, "singularity: configuration: "+tc.path+": "), "%v: %q", args, line)
				assert.True(t, strings.HasSuffix(line, tc.want), "%v: %q does not end in %q", args, line, tc.want)
				assert.NotContains(t, r.stderr, "sk-1", "the refusal never echoes a value")
				assert.Empty(t, r.stdout)
			}
		})
	}
}

// TestConfigFileAmountsAreNeverFloats: an amount of money written as a
// TOML float would reach the ledger rounded to binary64
// (0.123456789012345678 is 0.12345678901234568 there), so it is refused
// with a sentence asking for a quoted string; a quoted string and an
// integer are taken digit for digit, and a float stays a float's value
// for an option that is not money.
func TestConfigFileAmountsAreNeverFloats(t *testing.T) {
	t.Parallel()
	write := writer(t, t.TempDir())
	for _, tc := range []struct{ key, literal string }{
		{"starting-balance-usd", "0.123456789012345678"},
		{"starting-balance-usd", "1.00000000000000001"},
		{"starting-balance-usd", "10.0"},
		{"input-price-usd-per-million", "2.5e0"},
		{"spend-limit-usd-per-hour", "inf"},
	} {
		path := write(tc.key+tc.literal+".toml", "[being]\n"+tc.key+" = "+tc.literal+"\n")
		for _, args := range [][]string{{"config", "--config", path}, {"once", "--config", path}} {
			r := run(t, map[string]string{}, args...)
			assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
			assert.Equal(t, "singularity: configuration: "+path+": being."+tc.key+": write an amount as a quoted decimal string ("+
				tc.key+` = "0.5"), never a TOML float, which is rounded to binary`+"\n", r.stderr, "%v", args)
			assert.Empty(t, r.stdout)
		}
	}

	exact := write("exact.toml", `starting-balance-usd = "0.123456789012345678"
input-price-usd-per-million = 3
cycle-interval-secs = 2.5
`)
	values, _ := effective(t, map[string]string{}, "--config", exact)
	assert.Equal(t, "0.123456789012345678", values["starting-balance-usd"])
	assert.Equal(t, "3", values["input-price-usd-per-million"])
	assert.Equal(t, "2.5", values["cycle-interval-secs"])
}

// writer returns a function that writes a file of text named name in
// dir, owner-only, and returns its path.
func writer(t *testing.T, dir string) func(name, text string) string {
	return func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
}

// TestRefusalsNameKeyAndSource: a refused value names its option and
// where it came from: the flag, the variable, or the file's line and
// key; a sentence that names its variable already is not told it twice.
func TestRefusalsNameKeyAndSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "singularity.toml")
	require.NoError(t, os.WriteFile(file, []byte(`brama-auth = "none"
brama-model = "m"

[being]
starting-balance-usd = "ten"
`), 0o600))
	path := map[string]string{"PATH": os.Getenv("PATH")}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"file", path, nil, "configuration: " + file + ":5: starting-balance-usd: starting balance must be a decimal number"},
		{"flag", path, []string{"--starting-balance-usd", "x"}, "configuration: --starting-balance-usd: starting balance must be a decimal number"},
		{"variable", map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_STARTING_BALANCE_USD": "-1"}, nil, "configuration: SINGULARITY_STARTING_BALANCE_USD: prices and balance cannot be negative"},
		{"named variable", map[string]string{"PATH": os.Getenv("PATH"), "SINGULARITY_STARTING_BALANCE_USD": "1", "BRAMA_BASE_URL": "ftp://x"}, nil, "configuration: BRAMA_BASE_URL must use http or https"},
		{"named in the file", path, []string{"--starting-balance-usd", "1", "--brama-model", "any"}, "configuration: --brama-model: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
	}
	for _, c := range cases {
		for _, command := range []string{"once", "doctor"} {
			r := runIn(t, dir, c.env, append([]string{command}, c.args...)...)
			assert.Equal(t, 2, r.code, c.name)
			assert.Equal(t, "singularity: "+c.want+"\n", testkit.LastLine(r.stderr), c.name)
		}
	}
}

// TestConfigMarksWhatAResumedBeingKeeps: with a being in the state
// directory, `config` marks the options a resumed being takes from its
// state (its identity, its model, its starting balance, the stimulus)
// with the state's value; the others, and every option without a being,
// carry no mark.
func TestConfigMarksWhatAResumedBeingKeeps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"PATH": os.Getenv("PATH")}
	plain, plainSources := effective(t, env, "--state-dir", filepath.Join(dir, "state"))
	require.NotEmpty(t, plain)
	for key, source := range plainSources {
		assert.NotContains(t, source, "kept", key)
	}
	demo := run(t, env, "demo", "--cycles", "1", "--dir", dir)
	require.Equal(t, 0, demo.code, demo.stderr)
	_, sources := effective(t, env, "--state-dir", filepath.Join(dir, "state"), "--brama-model", "gpt-x")
	assert.Equal(t, `flag; kept: the state says "any"`, sources["brama-model"])
	assert.Equal(t, `default; kept: the state says "Ada"`, sources["agent-name"])
	assert.Equal(t, `default; kept: the state says "1"`, sources["starting-balance-usd"])
	assert.Equal(t, "unset; kept: only a fresh being's first cycle reads it", sources["stimulus"])
	assert.Equal(t, "default", sources["context-messages"])
	r := run(t, env, "config", "--state-dir", filepath.Join(dir, "state"))
	assert.Contains(t, r.stdout, "holds a being: resumed, it keeps what its state says")
}
