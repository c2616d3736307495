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
	"maps"
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
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// secretValue is the HMAC key in the secret file; bramatest holds its own
// copy and answers 401 to a request it does not verify.
const secretValue = "e2e-hmac-secret-value-7f3a"

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
	// bin, when set, is the runtime binary to run instead of
	// testkit.Singularity's.
	bin string
}

// newWorld prepares a world whose example Las is configured by lasConfig
// (JSON text, "{}" for a plain server).
func newWorld(t *testing.T, lasConfig string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		t:      t,
		dir:    dir,
		lasBin: testkit.ExampleLas(t),
		brama:  bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue)}),
	}
	w.env = testkit.ValidEnv(t, dir, secretValue)
	w.stateDir, w.lasCfg = w.env["SINGULARITY_STATE_DIR"], w.env["LAS_MCP_ENTRYPOINT"]
	require.NoError(t, os.WriteFile(w.lasCfg, []byte(lasConfig), 0o600))
	// An operator's run profile: prices, a fast cycle, short graces, the
	// surfaces the example Las offers, this world's Brama and Las.
	maps.Copy(w.env, map[string]string{
		"SINGULARITY_STARTING_BALANCE_USD":   "10",
		"SINGULARITY_INSTANCE_USD_PER_HOUR":  "0",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":  "0.15",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION": "0.6",
		"SINGULARITY_CYCLE_INTERVAL_SECS":    "0.05",
		"SINGULARITY_SHUTDOWN_GRACE_SECS":    "2",
		"SINGULARITY_HTTP_TIMEOUT_SECS":      "20",
		"SINGULARITY_MCP_TIMEOUT_SECS":       "20",
		"SINGULARITY_REQUIRED_SURFACES":      "skarbiec,finance",
		"BRAMA_BASE_URL":                     w.brama.URL,
		"LAS_COMMAND":                        w.lasBin,
	})
	return w
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
	bin := w.bin
	if bin == "" {
		bin = testkit.Singularity(w.t)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = testkit.Environ(w.env)
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
	p := w.prepare(args...)
	require.NoError(w.t, p.cmd.Start())
	p.started()
	return p
}

// prepare is the binary ready to start with args, its output captured.
func (w *world) prepare(args ...string) *process {
	cmd := w.command(args...)
	p := &process{t: w.t, cmd: cmd, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	return p
}

// started waits for the process just started in the background, and
// kills it when the test ends if it is still running.
func (p *process) started() {
	go func() { p.done <- p.cmd.Wait() }()
	p.t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func (p *process) signal(sig os.Signal) { require.NoError(p.t, p.cmd.Process.Signal(sig)) }

// wait waits for the process to exit within timeout.
func (p *process) wait(timeout time.Duration) result {
	p.t.Helper()
	select {
	case err := <-p.done:
		code := testkit.ExitCode(p.t, err)
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
	return testkit.Journal(w.t, w.stateDir)
}

// waitJournal polls the journal file (it is written by another process)
// until cond holds, failing after deadline.
func (w *world) waitJournal(deadline time.Duration, what string, cond func([]state.Event) bool) []state.Event {
	w.t.Helper()
	path := testkit.JournalPath(w.stateDir)
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

// textReplies answers every completion with a plain reply.
func textReplies(prompt, completion uint64) func(*bramatest.Request) bramatest.Reply {
	return func(*bramatest.Request) bramatest.Reply {
		return bramatest.TextReply("nothing to do", bramatest.Usage(prompt, completion))
	}
}
