package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// mockKey is the bearer key openai-mock-api is started with.
const mockKey = "sk-mock-quickstart-5c1e9a"

// mockScript is openai-mock-api's configuration: cycle 1 is answered;
// cycle 2, whose request matches no flow, gets the server's own 400 ("No
// matching response found"); cycle 3, which replaces cycle 2's unanswered
// framing, is answered again.
const mockScript = `apiKey: '%s'
port: %d
responses:
  - id: 'first-cycle'
    messages:
      - role: 'system'
        matcher: 'any'
      - role: 'user'
        content: '^Begin autonomous cycle 1\.'
        matcher: 'regex'
      - role: 'assistant'
        content: 'Resting for now.'
  - id: 'after-the-rejection'
    messages:
      - role: 'system'
        matcher: 'any'
      - role: 'user'
        matcher: 'any'
      - role: 'assistant'
        content: 'Resting for now.'
      - role: 'user'
        content: '^Begin autonomous cycle 3\.'
        matcher: 'regex'
      - role: 'assistant'
        content: 'Back at work.'
`

// startMockOpenAI runs openai-mock-api (pinned in test/peers) on a free
// loopback port and returns its /v1 base URL.
func startMockOpenAI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(testkit.ModuleRoot(t), "test", "peers", "node_modules", ".bin", "openai-mock-api")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("openai-mock-api is not installed (%v); run `make peers`", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cfg := filepath.Join(t.TempDir(), "mock.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(mockScript, mockKey, port)), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", cfg, "--port", fmt.Sprint(port), "--log-file", filepath.Join(t.TempDir(), "mock.log"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base + "/v1"
			}
		}
		require.True(t, time.Now().Before(deadline), "openai-mock-api never answered /health: %v", err)
		time.Sleep(50 * time.Millisecond) // polling another process's start
	}
}

// quickStart is the README's "Standalone in one file" section: its
// first sh block (the quick start) and its last (reading what the being
// did), each line by line. The one between, the keyless server's init
// line, is run by test/firsthour/run.sh (make first-hour).
func quickStart(t *testing.T) (start, read []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "README.md"))
	require.NoError(t, err)
	text := string(data)
	at := strings.Index(text, "\n## Standalone in one file\n")
	require.GreaterOrEqual(t, at, 0, "the README has the section")
	section := text[at+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 3, "the quick start, a keyless server's init and the reading of it")
	lines := func(b []string) []string { return strings.Split(strings.TrimSpace(b[1]), "\n") }
	return lines(blocks[0]), lines(blocks[2])
}

// TestReadmeStandaloneQuickStart runs the README's standalone quick start
// as written, from nothing but `singularity init` with flags, against
// openai-mock-api with a bearer key: only the provider's URL and model
// are the mock's. The environment holds HOME, PATH and the key's
// variable, so no identity or LAS_RELEASE_* variable is set. doctor is
// ok; once debits exactly what the usage costs at the prices init wrote;
// run lives through the mock's 400 at cycle 2 and recovers at cycle 3.
// No command names the configuration: each finds it in the directory the
// README moves to, whose node_modules (made before init, which leaves it
// be) is test/peers', so that npx finds the servers file's filesystem
// server installed.
func TestReadmeStandaloneQuickStart(t *testing.T) {
	t.Parallel()
	base := startMockOpenAI(t)
	lines, read := quickStart(t)
	require.GreaterOrEqual(t, len(lines), 4)
	home := t.TempDir()
	binDir := filepath.Dir(testkit.Singularity(t))
	env := []string{"HOME=" + home, "OPENAI_API_KEY=" + mockKey, "PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	peers := filepath.Join(testkit.ModuleRoot(t), "test", "peers")
	if _, err := os.Stat(filepath.Join(peers, "node_modules", "@modelcontextprotocol", "server-filesystem")); err != nil {
		t.Skipf("the filesystem server is not installed (%v); run `make peers`", err)
	}
	dir := filepath.Join(home, "ada")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.Symlink(filepath.Join(peers, "node_modules"), filepath.Join(dir, "node_modules")))
	// sh runs line from cwd, as a reader who moved there would.
	sh := func(cwd, line string) *exec.Cmd {
		line = strings.ReplaceAll(line, "https://api.openai.com/v1", base)
		line = strings.ReplaceAll(line, "gpt-4o-mini", "gpt-4")
		cmd := exec.Command("sh", "-e", "-c", line)
		cmd.Env, cmd.Dir = env, cwd
		return cmd
	}
	// Every line but the last (run, which lives until stopped) in one
	// shell, as a reader would type them, each after a marker that
	// splits the output by command.
	run := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(run, "singularity run "), run)
	var script strings.Builder
	for i, line := range lines[:len(lines)-1] {
		fmt.Fprintf(&script, "echo '@@@ %d'\n%s\n", i, line)
	}
	require.Contains(t, lines, "cd $HOME/ada", "the README moves to the being's directory")
	for _, line := range append(append([]string{}, lines...), read...) {
		require.NotContains(t, line, "--config", "no command names the configuration")
	}
	out, err := sh(home, script.String()).CombinedOutput()
	require.NoError(t, err, "%s\n%s", script.String(), out)
	outputs := map[string]string{}
	for _, part := range strings.Split(string(out), "@@@ ")[1:] {
		n, text, _ := strings.Cut(part, "\n")
		var i int
		_, err := fmt.Sscan(n, &i)
		require.NoError(t, err)
		if fields := strings.Fields(lines[i]); len(fields) > 1 && fields[0] == "singularity" {
			outputs[fields[1]] = text
		}
	}
	stateDir := filepath.Join(dir, "state")

	var doctor map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastJSON(t, outputs["doctor"])), &doctor), outputs["doctor"])
	assert.Equal(t, true, doctor["ok"], outputs["doctor"])

	// once: the debit is exactly the usage at init's prices (0.15 and
	// 0.6 USD per million prompt and completion tokens).
	var report struct {
		Cycle   uint64 `json:"cycle"`
		Status  string `json:"status"`
		Balance string `json:"balance_usd"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastJSON(t, outputs["once"])), &report), outputs["once"])
	assert.Equal(t, uint64(1), report.Cycle)
	assert.Equal(t, "completed", report.Status)
	events := testkit.Journal(t, stateDir)
	var usage, debit state.Event
	for _, e := range events {
		switch e.Type {
		case state.EventModelCompleted:
			usage = e
		case state.EventCostDebited:
			debit = e
		}
	}
	require.Positive(t, usage.Usage.PromptTokens, "the mock reported its usage")
	want := testkit.USD(fmt.Sprint(usage.Usage.PromptTokens)).Mul(testkit.USD("0.15")).
		Add(testkit.USD(fmt.Sprint(usage.Usage.CompletionTokens)).Mul(testkit.USD("0.6"))).Mul(testkit.USD("0.000001"))
	assert.Equal(t, want.String(), debit.Amount.String(), "usage %+v", usage.Usage)
	assert.Equal(t, testkit.USD("10").Sub(want).String(), report.Balance)

	// run: cycle 2 is refused with a 400, cycle 3 answered.
	cmd := sh(dir, "exec "+run)
	stderr := newSyncBuffer() // read while the process writes it
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	recovered := func() bool {
		events, err := readJournalLoose(testkit.JournalPath(stateDir))
		if err != nil {
			return false
		}
		for _, e := range events {
			if e.Type == state.EventModelCompleted && e.Cycle == 3 {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(90 * time.Second)
	for !recovered() {
		select {
		case err := <-done:
			t.Fatalf("run ended before recovering: %v\n%s", err, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "run never answered cycle 3:\n%s", stderr.String())
		time.Sleep(100 * time.Millisecond) // polling another process's journal
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("run did not stop after SIGINT:\n%s", stderr.String())
	}
	events = testkit.Journal(t, stateDir)
	var warned bool
	for _, e := range events {
		if e.Type == state.EventWarning && e.Cycle == 2 && strings.Contains(e.Message, "No matching response found") {
			warned = true
		}
	}
	assert.True(t, warned, "cycle 2's rejection is a warning carrying the gateway's sentence")
	st, err := state.Load(stateDir)
	require.NoError(t, err)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Equal(t, state.StatusStopped, st.Status)
	assert.NotContains(t, stderr.String(), mockKey)

	// The second block: status and journal, found from the same file.
	require.Len(t, read, 2)
	status, err := sh(dir, read[0]).Output()
	require.NoError(t, err, read[0])
	assert.Contains(t, string(status), "family ledger: exact", read[0])
	journal, err := sh(dir, read[1]).Output()
	require.NoError(t, err, read[1])
	jl := strings.Split(strings.TrimSpace(string(journal)), "\n")
	assert.Len(t, jl, min(20, len(events)), "--tail 20 of the being's %d events", len(events))
	assert.Contains(t, jl[len(jl)-1], " stopped ", "the newest event is the being's stop")
}

// lastJSON is the last line of out that is a JSON object (logs go before
// it on the combined output).
func lastJSON(t *testing.T, out string) string {
	t.Helper()
	var found string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	var obj strings.Builder
	depth := 0
	for sc.Scan() {
		line := sc.Text()
		if depth == 0 && strings.HasPrefix(line, "{") {
			obj.Reset()
		}
		if depth > 0 || strings.HasPrefix(line, "{") {
			obj.WriteString(line + "\n")
			depth += strings.Count(line, "{") - strings.Count(line, "}")
			if depth == 0 {
				found = obj.String()
			}
		}
	}
	require.NotEmpty(t, found, "no JSON object in:\n%s", out)
	return found
}
