package crash

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/simbrama"
)

// The bounds of every wait. The machine is shared and small; a healthy
// family meets each of them in well under a second.
const (
	exitWait    = 15 * time.Second // a SIGKILLed process to be reaped
	triggerWait = 20 * time.Second // the completion a kill is timed after
	readyWait   = 30 * time.Second // every resumed being's first completion
	stopWait    = 30 * time.Second // a graceful stop after SIGINT
)

// The family of the demo world: the simulated Brama scripts the root
// "Ada" to spawn Bo (cycle 1) and Cy (cycle 2), and Bo to spawn Di.
const (
	rootName         = "Ada"
	grandchildParent = "Bo"
	secret           = "crash-test-hmac-secret-2f9c41"
)

// observer sits between the beings and the simulated Brama. Every
// process the test starts gets its own base URL, /run/<n>, so each
// completion request is attributed to the process that sent it (a
// killed process's last request cannot be mistaken for its successor's).
// It counts completions per run and per being (read from the system
// prompt), and wakes waiters on every one.
//
// It also reads the messages on the wire (docs/family.md#messages): each
// "Message from …" paragraph of a framing. A framing that is the newest
// message of its request (the cycle's first round) sends its paragraphs
// to the model afresh; later requests carry them as history. No request
// may carry one paragraph twice.
type observer struct {
	mu      sync.Mutex
	runs    map[int]*runSeen
	changed chan struct{}
	twice   []string // paragraphs some request carried twice
}

type runSeen struct {
	total  int
	byName map[string]int
	fresh  map[string]int // paragraph → requests that sent it afresh
}

func newObserver() *observer {
	return &observer{runs: map[int]*runSeen{}, changed: make(chan struct{})}
}

// messageMark starts a message's paragraph in a framing.
const messageMark = "Message from "

func (o *observer) see(run int, body []byte) {
	name := simbrama.BeingOf(body)
	fresh, twice := wireMessages(body)
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.runs[run]
	if r == nil {
		r = &runSeen{byName: map[string]int{}, fresh: map[string]int{}}
		o.runs[run] = r
	}
	r.total++
	r.byName[name]++
	for _, p := range fresh {
		r.fresh[p]++
	}
	o.twice = append(o.twice, twice...)
	close(o.changed)
	o.changed = make(chan struct{})
}

// snapshot returns run's counts and a channel closed on the next change.
func (o *observer) snapshot(run int) (total int, byName map[string]int, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	byName = map[string]int{}
	if r := o.runs[run]; r != nil {
		total = r.total
		maps.Copy(byName, r.byName)
	}
	return total, byName, o.changed
}

// forget drops a finished run's counts and returns the message
// paragraphs it sent afresh, with how many requests did.
func (o *observer) forget(run int) map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var fresh map[string]int
	if r := o.runs[run]; r != nil {
		fresh = r.fresh
	}
	delete(o.runs, run)
	return fresh
}

// duplicates returns the paragraphs some request carried twice.
func (o *observer) duplicates() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.twice)
}

// wireMessages reads a completion request's message paragraphs: those
// of the framing that is its newest message (fresh), and those it
// carries more than once in all (twice).
func wireMessages(body []byte) (fresh, twice []string) {
	if !bytes.Contains(body, []byte(messageMark)) {
		return nil, nil
	}
	var req struct {
		Messages []chat.Message `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, nil
	}
	seen := map[string]int{}
	for i, m := range req.Messages {
		if m.Role != chat.RoleUser || !state.IsFraming(m) {
			continue
		}
		for _, p := range strings.Split(m.Content, "\n\n") {
			if !strings.HasPrefix(p, messageMark) {
				continue
			}
			seen[p]++
			if seen[p] == 2 {
				twice = append(twice, p)
			}
			if i == len(req.Messages)-1 {
				fresh = append(fresh, p)
			}
		}
	}
	return fresh, twice
}

// until waits until cond holds over run's counts, the process exits, or
// limit passes; it reports whether cond held.
func (o *observer) until(run int, exited <-chan struct{}, limit time.Duration, cond func(total int, byName map[string]int) bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		total, byName, changed := o.snapshot(run)
		if cond(total, byName) {
			return true
		}
		select {
		case <-changed:
		case <-exited:
			return false
		case <-deadline.C:
			return false
		}
	}
}

// bramaProxy starts the simulated Brama and the observing proxy in front
// of it, both closed at cleanup.
func bramaProxy(t *testing.T, obs *observer) string {
	t.Helper()
	sim, err := simbrama.Start([]byte(secret), simbrama.Options{RootName: rootName, GrandchildParent: grandchildParent, Talks: simbrama.Talkative})
	require.NoError(t, err)
	target, err := url.Parse(sim.URL())
	require.NoError(t, err)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	// A SIGKILL cuts requests off mid-flight all the time; that is no
	// news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/run/")
		digits, path, _ := strings.Cut(rest, "/")
		run, err := strconv.Atoi(digits)
		if !ok || err != nil {
			http.NotFound(w, r)
			return
		}
		r.URL.Path, r.URL.RawPath = "/"+path, ""
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			obs.see(run, body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		proxy.Close()
		transport.CloseIdleConnections()
		sim.Close()
	})
	return proxy.URL
}

// family is one family's world: a directory holding the configuration
// files, the workspace, the root's state directory and the deliveries.
type family struct {
	dir       string
	stateDir  string
	recordDir string
	env       map[string]string
}

// newFamily prepares a fresh family in dir whose Las is the recordlas
// binary las.
func newFamily(t *testing.T, dir, las string) *family {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	env := testkit.ValidEnv(t, dir, secret)
	f := &family{dir: dir, stateDir: env["SINGULARITY_STATE_DIR"], recordDir: filepath.Join(dir, "deliveries"), env: env}
	require.NoError(t, os.MkdirAll(f.recordDir, 0o700))
	cfg, err := json.Marshal(lasConfig{
		Config:    examplelasConfig(),
		RecordDir: f.recordDir,
	})
	require.NoError(t, err)
	lasCfg := filepath.Join(dir, "recordlas.json")
	require.NoError(t, os.WriteFile(lasCfg, cfg, 0o600))
	// The demo world's profile (cmd/singularity/demo.go): its prices and
	// balance, its surfaces; a fast cycle and short graces.
	maps.Copy(env, map[string]string{
		"SINGULARITY_STARTING_BALANCE_USD":   "1",
		"SINGULARITY_INSTANCE_USD_PER_HOUR":  "0.36",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":  "0.15",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION": "0.6",
		"SINGULARITY_CYCLE_INTERVAL_SECS":    "0.02",
		"SINGULARITY_CONTEXT_MESSAGES":       "60",
		"SINGULARITY_SHUTDOWN_GRACE_SECS":    "2",
		"SINGULARITY_HTTP_TIMEOUT_SECS":      "20",
		"SINGULARITY_MCP_TIMEOUT_SECS":       "20",
		"SINGULARITY_STIMULUS":               "A simulated market opened nearby; local businesses want price surveys.",
		"SINGULARITY_REQUIRED_SURFACES":      "skarbiec,finance",
		"SINGULARITY_LOG_LEVEL":              "warn",
		"SINGULARITY_LOG_FORMAT":             "text",
		"LAS_ONLY":                           "echo,skarbiec,finance",
		"LAS_COMMAND":                        las,
		"LAS_MCP_ENTRYPOINT":                 lasCfg,
		// The family tools: relatives message each other on every cycle
		// from the third (simbrama's talkative world).
		"SINGULARITY_FAMILY_TOOLS": "1",
	})
	return f
}

// process is one run of the singularity binary.
type process struct {
	cmd    *exec.Cmd
	run    int
	stderr *tailBuffer
	exited chan struct{} // closed when the process has been reaped
	err    error         // Wait's result, once exited is closed
}

// start runs `singularity run` (with --resume when the root's state
// exists) as run number run, its Brama at the proxy's /run/<run>.
func (f *family) start(t *testing.T, bin, proxyURL string, run int) *process {
	t.Helper()
	args := []string{"run"}
	if _, err := os.Stat(filepath.Join(f.stateDir, stateFile)); err == nil {
		args = append(args, "--resume")
	}
	env := maps.Clone(f.env)
	env["BRAMA_BASE_URL"] = proxyURL + "/run/" + strconv.Itoa(run)
	cmd := exec.Command(bin, args...)
	cmd.Env = testkit.Environ(env)
	p := &process{cmd: cmd, run: run, stderr: &tailBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// wait waits for the process to be reaped within limit and returns its
// exit code (-1 when a signal ended it).
func (p *process) wait(limit time.Duration) (int, error) {
	select {
	case <-p.exited:
	case <-time.After(limit):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump on stderr
		select {
		case <-p.exited:
		case <-time.After(exitWait):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		return 0, fmt.Errorf("run %d did not exit within %v; stderr:\n%s", p.run, limit, p.stderr)
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0, nil
	case errors.As(p.err, &exit):
		return exit.ExitCode(), nil
	default:
		return 0, p.err
	}
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *tailBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if over := len(l.b) - 64<<10; over > 0 {
		l.b = append([]byte(nil), l.b[over:]...)
	}
	return len(p), nil
}

func (l *tailBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
