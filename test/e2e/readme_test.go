package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// readmeExample is what the README's "Run a being against your own
// model" section says to do: the variables of the common block and of one
// gateway block, the prices file it writes, and the commands it runs.
type readmeExample struct {
	env      map[string]string
	prices   string
	commands []string
}

// readmeExamples parses the section's sh blocks: the first is the common
// one, each later one a gateway, keyed by its BRAMA_AUTH.
func readmeExamples(t *testing.T) map[string]readmeExample {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	text := string(data)
	start := strings.Index(text, "\n## Run a being against your own model\n")
	require.GreaterOrEqual(t, start, 0, "the README has the section")
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 3, "a common block and two gateways")
	parse := func(block string) readmeExample {
		ex := readmeExample{env: map[string]string{}}
		sc := bufio.NewScanner(strings.NewReader(block))
		inPrices := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case inPrices && line == "PRICES":
				inPrices = false
			case inPrices:
				ex.prices += line + "\n"
			case strings.Contains(line, "<<'PRICES'"):
				inPrices = true
			case strings.HasPrefix(line, "export "):
				k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
				require.True(t, ok, line)
				ex.env[k] = v
			case strings.HasPrefix(line, "singularity "):
				ex.commands = strings.Split(line, " && ")
			}
		}
		return ex
	}
	common := parse(blocks[0][1])
	out := map[string]readmeExample{}
	for _, b := range blocks[1:] {
		ex := parse(b[1])
		for k, v := range common.env {
			ex.env[k] = v
		}
		out[ex.env["BRAMA_AUTH"]] = ex
	}
	return out
}

// TestReadmeExamples runs both examples of the README as written, against
// a fake OpenAI-compatible server: $HOME is a temporary directory, the
// provider's URL the fake server's /v1 base, and the example Las
// served from the servers file (the files the example names are made
// where it names them), with no identity variable and no release pin.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	examples := readmeExamples(t)
	require.Len(t, examples, 2)
	for _, auth := range []string{"bearer", "none"} {
		t.Run(auth, func(t *testing.T) {
			t.Parallel()
			ex, ok := examples[auth]
			require.True(t, ok, "the README has a %s example", auth)
			testReadmeExample(t, auth, ex)
		})
	}
}

func testReadmeExample(t *testing.T, auth string, ex readmeExample) {
	home := t.TempDir()
	cfg := bramatest.Config{Auth: auth, Models: []string{ex.env["BRAMA_MODEL"], "some-other-model"}}
	const key = "sk-readme-example-key-81f2"
	if auth == "bearer" {
		cfg.APIKey = []byte(key)
	}
	srv := bramatest.Start(t, cfg)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		// The provider names the model it ran, as a real one does.
		return bramatest.ModelReply(ex.env["BRAMA_MODEL"], bramatest.TextReply("Looking around.", bramatest.Usage(1000, 100)))
	})

	require.True(t, strings.HasSuffix(ex.env["BRAMA_BASE_URL"], "/v1"), "the README's base URL ends in /v1")
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home}
	for k, v := range ex.env {
		env[k] = strings.ReplaceAll(v, "$HOME", home)
	}
	env["BRAMA_BASE_URL"] = srv.URL
	env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "0.05" // not the README's: the test should be quick
	for _, name := range []string{"SINGULARITY_AGENT_ID", "SINGULARITY_HOST", "LAS_RELEASE_MANIFEST_FILE", "LAS_COMMAND"} {
		require.NotContains(t, env, name, "the README needs no Wisent identity, release pin or classic Las")
	}
	// The servers file names the example Las where the README's is empty,
	// so that the being has Las tools.
	lasConfig := filepath.Join(home, "las.json")
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"lab": map[string]any{"command": testkit.ExampleLas(t), "args": []string{lasConfig}},
	}})
	require.NoError(t, err)
	require.NotEmpty(t, env["LAS_SERVERS_FILE"], "the README names a servers file")
	files := map[string]string{
		lasConfig:               "{}",
		env["LAS_SERVERS_FILE"]: string(servers),
	}
	if auth == "bearer" {
		require.NotEmpty(t, ex.prices, "the bearer example writes a prices file")
		files[env["BRAMA_PRICES_FILE"]] = ex.prices
		files[env["BRAMA_API_KEY_FILE"]] = key + "\n"
	}
	for path, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	require.NoError(t, os.MkdirAll(env["SINGULARITY_WORKSPACE"], 0o700))

	w := &world{t: t, dir: home, stateDir: env["SINGULARITY_STATE_DIR"], brama: srv, env: env}
	require.Equal(t, []string{"singularity doctor", "singularity once", "singularity run --resume"}, ex.commands)
	var outputs []string
	for _, command := range ex.commands {
		args := strings.Fields(command)[1:]
		var r result
		if args[0] == "run" {
			p := w.start(args...)
			w.waitJournal(waitLimit, "a second cycle", cyclesStarted(2))
			p.signal(syscall.SIGTERM)
			r = p.wait(waitLimit)
		} else {
			r = w.run(args...)
		}
		require.Equal(t, 0, r.code, "%s: %s", command, r.stderr)
		outputs = append(outputs, r.stdout, r.stderr)
	}
	events := w.journal()
	st := w.loadState()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Empty(t, warnings(events))
	if auth == "bearer" {
		// gpt-4o-mini's prices from the README's file: 1000×0.15 + 100×0.6 per million.
		assert.Equal(t, "0.00021", debits(events)[0])
		assertNowhere(t, w, key, outputs)
	} else {
		assert.Equal(t, "0", debits(events)[0])
	}
	for _, req := range srv.Requests() {
		assert.True(t, req.Verified, req.Path)
	}
}
