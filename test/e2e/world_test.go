// Package e2e_test runs the built singularity binary against a real
// HMAC-verifying test Brama (test/bramatest) and the example Las as a real
// child process, as an operator would: it reads what the binary prints,
// the state directory it leaves behind and what the Brama server
// received.
package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

const (
	hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	// secretValue is the HMAC key in the secret file; bramatest holds its
	// own copy and answers 401 to a request it does not verify.
	secretValue = "e2e-hmac-secret-value-7f3a"
	agentID     = "agent-e2e"
)

// world is one operator's machine: a directory with the secret file, the
// Las release pins, the example Las config, a workspace and a state
// directory, plus a test Brama.
type world struct {
	t        *testing.T
	dir      string
	stateDir string
	brama    *bramatest.Server
	lasBin   string
	lasCfg   string
	env      map[string]string
}

// newWorld prepares a world whose example Las is configured by lasConfig
// (JSON text, "{}" for a plain server).
func newWorld(t *testing.T, lasConfig string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		t:        t,
		dir:      dir,
		stateDir: filepath.Join(dir, "state"),
		lasBin:   testbin.Build(t, "./cmd/examplelas"),
		lasCfg:   filepath.Join(dir, "las.json"),
		brama:    bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue)}),
	}
	files := map[string]string{
		"las.json":      lasConfig,
		"manifest.json": `{"release":"test"}`,
		"manifest.sig":  "signature",
		"trust.json":    `{"keys":[]}`,
		"hmac.secret":   secretValue + "\n",
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	workspace := filepath.Join(dir, "workspace")
	require.NoError(t, os.Mkdir(workspace, 0o700))
	w.env = map[string]string{
		"PATH":                                os.Getenv("PATH"),
		"HOME":                                dir,
		"SINGULARITY_AGENT_ID":                agentID,
		"SINGULARITY_AGENT_NAME":              "Ada",
		"SINGULARITY_AGENT_TICKER":            "ADA",
		"SINGULARITY_SPECIALTY":               "market research",
		"SINGULARITY_ROLE":                    "worker",
		"SINGULARITY_ENVIRONMENT":             "test",
		"SINGULARITY_HOST":                    "local",
		"SINGULARITY_WORKLOAD_ID":             "wl-1",
		"SINGULARITY_WORKLOAD_PUBLIC_KEY":     hex64,
		"SINGULARITY_EXECUTABLE_SHA256":       hex64,
		"SINGULARITY_CODE_SHA256":             hex64,
		"SINGULARITY_POLICY_SHA256":           hex64,
		"SINGULARITY_POLICY_SEQUENCE":         "1",
		"SINGULARITY_STATE_DIR":               w.stateDir,
		"SINGULARITY_WORKSPACE":               workspace,
		"SINGULARITY_STARTING_BALANCE_USD":    "10",
		"SINGULARITY_INSTANCE_USD_PER_HOUR":   "0",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":   "0.15",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION":  "0.6",
		"SINGULARITY_CYCLE_INTERVAL_SECS":     "0.05",
		"SINGULARITY_SHUTDOWN_GRACE_SECS":     "2",
		"SINGULARITY_HTTP_TIMEOUT_SECS":       "20",
		"SINGULARITY_MCP_TIMEOUT_SECS":        "20",
		"SINGULARITY_REQUIRED_SURFACES":       "skarbiec,finance",
		"BRAMA_BASE_URL":                      w.brama.URL,
		"BRAMA_HMAC_SECRET_FILE":              filepath.Join(dir, "hmac.secret"),
		"LAS_COMMAND":                         w.lasBin,
		"LAS_MCP_ENTRYPOINT":                  w.lasCfg,
		"LAS_RELEASE_MANIFEST_FILE":           filepath.Join(dir, "manifest.json"),
		"LAS_RELEASE_MANIFEST_SIGNATURE_FILE": filepath.Join(dir, "manifest.sig"),
		"LAS_RELEASE_TRUST_STORE_FILE":        filepath.Join(dir, "trust.json"),
		"LAS_RELEASE_WATERMARK_FILE":          filepath.Join(dir, "watermark"),
	}
	return w
}

func (w *world) environ() []string {
	out := make([]string, 0, len(w.env))
	for k, v := range w.env {
		out = append(out, k+"="+v)
	}
	return out
}

// result is a finished run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// errorLine is the one "singularity: …" line on stderr (log lines
// around it are ignored), or "" when there is none.
func (r result) errorLine() string {
	var found string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "singularity: ") {
			found = line
		}
	}
	return found
}

// command returns the binary ready to run with the world's environment.
func (w *world) command(args ...string) *exec.Cmd {
	bin := testbin.Build(w.t, "./cmd/singularity")
	cmd := exec.Command(bin, args...)
	cmd.Env = w.environ()
	return cmd
}

// run runs the binary to completion (within a deadline).
func (w *world) run(args ...string) result {
	w.t.Helper()
	p := w.start(args...)
	return p.wait(60 * time.Second)
}

// process is the binary running in the background.
type process struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan error
}

// syncBuffer is an output stream the test may read while the process
// writes it.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor blocks until the stream contains text, failing after limit.
func (s *syncBuffer) waitFor(t *testing.T, text string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		s.mu.Lock()
		found, changed := strings.Contains(s.buf.String(), text), s.changed
		s.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("never saw %q within %v in:\n%s", text, limit, s.String())
		}
	}
}

func (w *world) start(args ...string) *process {
	w.t.Helper()
	cmd := w.command(args...)
	p := &process{t: w.t, cmd: cmd, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	require.NoError(w.t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	w.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) signal(sig os.Signal) { require.NoError(p.t, p.cmd.Process.Signal(sig)) }

// wait waits for the process to exit within timeout.
func (p *process) wait(timeout time.Duration) result {
	p.t.Helper()
	select {
	case err := <-p.done:
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			p.t.Fatalf("wait: %v", err)
		}
		return result{stdout: p.stdout.String(), stderr: p.stderr.String(), code: code}
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		err := <-p.done
		p.t.Fatalf("the process did not exit within %v (%v); stderr:\n%s", timeout, err, p.stderr.String())
		return result{}
	}
}

// journal reads the being's activity journal.
func (w *world) journal() []state.Event {
	w.t.Helper()
	events, err := state.ReadJournal(filepath.Join(w.stateDir, "activity.jsonl"))
	require.NoError(w.t, err)
	return events
}

// waitJournal polls the journal file (it is written by another process)
// until cond holds, failing after deadline.
func (w *world) waitJournal(deadline time.Duration, what string, cond func([]state.Event) bool) []state.Event {
	w.t.Helper()
	path := filepath.Join(w.stateDir, "activity.jsonl")
	end := time.Now().Add(deadline)
	for {
		if events, err := readJournalLoose(path); err == nil && cond(events) {
			return events
		}
		if time.Now().After(end) {
			w.t.Fatalf("journal never showed %s within %v", what, deadline)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's file
	}
}

// readJournalLoose parses the complete lines of a journal that another
// process may be appending to.
func readJournalLoose(path string) ([]state.Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var events []state.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e state.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			break
		}
		events = append(events, e)
	}
	return events, nil
}

// stateJSON reads state.json as generic JSON, to assert the exact text of
// its fields.
func (w *world) stateJSON() map[string]any {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join(w.stateDir, "state.json"))
	require.NoError(w.t, err)
	var m map[string]any
	require.NoError(w.t, json.Unmarshal(data, &m))
	return m
}

// loadState reads state.json with the runtime's own schema.
func (w *world) loadState() *state.Being {
	w.t.Helper()
	b, err := state.Load(w.stateDir)
	require.NoError(w.t, err)
	return b
}

// types lists the event types, in order.
func types(events []state.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func count(events []state.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// textReplies answers every completion with a plain reply.
func textReplies(prompt, completion uint64) func(*bramatest.Request) bramatest.Reply {
	return func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("nothing to do", bramatest.Usage(prompt, completion))
	}
}
