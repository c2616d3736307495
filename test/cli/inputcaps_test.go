package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/boundedfile"
)

// TestConfigurationFilesAreReadBounded: the configuration file, the
// prices, tiers and servers files and a secret file are each refused,
// when they are a FIFO, a link to /dev/zero or past their cap (a sparse
// 2 GiB file, or comments just past the configuration file's cap), with
// one sentence naming the file, exit 2, at once and in little memory:
// nothing waits on a FIFO, drains a device or reads a huge file whole.
func TestConfigurationFilesAreReadBounded(t *testing.T) {
	w := newWorld(t)
	kinds := []struct {
		name string
		cap  int64
		// args and env name the file at path for the command.
		args func(path string) []string
		env  func(path string) map[string]string
		// refused is the sentence for what, a regexp of what follows
		// "singularity: ".
		refused func(path, what string) string
	}{
		{
			name: "configuration file", cap: config.MaxConfigFileBytes,
			args: func(path string) []string { return []string{"config", "--config", path} },
			env:  func(string) map[string]string { return map[string]string{} },
			refused: func(path, what string) string {
				return `configuration: ` + regexp.QuoteMeta(path) + `: ` + what
			},
		},
		{
			name: "prices file", cap: config.MaxPricesFileBytes,
			args: func(string) []string { return []string{"once"} },
			env:  w.with("BRAMA_PRICES_FILE"),
			refused: func(path, what string) string {
				return `configuration: BRAMA_PRICES_FILE: ` + regexp.QuoteMeta(path) + `: ` + what
			},
		},
		{
			name: "tiers file", cap: config.MaxTiersFileBytes,
			args: func(string) []string { return []string{"doctor"} },
			env:  w.with("SINGULARITY_TIERS_FILE"),
			refused: func(path, what string) string {
				return `configuration: SINGULARITY_TIERS_FILE: ` + regexp.QuoteMeta(path) + `: ` + what
			},
		},
		{
			name: "servers file", cap: config.MaxServersFileBytes,
			args: func(string) []string { return []string{"once"} },
			env:  w.with("LAS_SERVERS_FILE"),
			refused: func(_, what string) string {
				return `configuration: LAS_SERVERS_FILE: ` + what
			},
		},
		{
			name: "secret file", cap: config.MaxSecretFileBytes,
			args: func(string) []string { return []string{"once"} },
			env:  w.with("BRAMA_HMAC_SECRET_FILE"),
			refused: func(path, what string) string {
				if what == "not a regular file" {
					return `secret file: not a regular file: ` + regexp.QuoteMeta(path)
				}
				return `secret file: ` + regexp.QuoteMeta(path) + ` is ` + what
			},
		},
	}
	notRegular := "not a regular file"
	for _, kind := range kinds {
		tooLarge := "larger than the " + regexp.QuoteMeta(boundedfile.Size(kind.cap)) + " cap"
		inputs := []struct {
			name string
			make func(t *testing.T, path string)
			what string
		}{
			{"FIFO", fifo, notRegular},
			{"link to /dev/zero", symlinkZero, notRegular},
			{"sparse 2 GiB", sparse(2 << 30), tooLarge},
		}
		if kind.name == "configuration file" {
			inputs = append(inputs, struct {
				name string
				make func(t *testing.T, path string)
				what string
			}{"comments past the cap", comments(kind.cap + 1), tooLarge})
		}
		for _, in := range inputs {
			t.Run(kind.name+"/"+in.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "input")
				in.make(t, path)
				args := kind.args(path)
				r, peak := runMeasured(t, 20*time.Second, kind.env(path), args...)
				assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
				assert.Regexp(t, `^singularity: `+kind.refused(path, in.what)+`\n$`, r.stderr, "%v", args)
				assert.Less(t, peak, int64(96<<20), "%v: peak resident memory", args)
			})
		}
	}
}

// with is the world's valid environment with variable naming the file
// given.
func (w world) with(variable string) func(path string) map[string]string {
	return func(path string) map[string]string {
		env := w.env()
		env[variable] = path
		return env
	}
}

// comments makes a TOML file of size bytes that holds only comments.
func comments(size int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		line := []byte("# a comment, and nothing else\n")
		data := bytes.Repeat(line, int(size)/len(line)+1)[:size]
		require.NoError(t, os.WriteFile(path, data, 0o600))
	}
}
