// Package cluster runs a family across member processes
// (docs/cluster.md): real `singularity run` binaries (built without the
// race detector: protoactor's cluster code is racy under it) joined
// through a real etcd on loopback, the demo world's simulated Brama and a
// recording example Las. Members are SIGKILLed, SIGSTOPped and stopped,
// and after each the family's files are judged as a next holder would
// judge them: every being's trusted journal explains its money exactly,
// and no tool call reached a Las twice.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/examplelas"
	"github.com/wisent/singularity/world/simbrama"
)

const (
	rootName         = "Ada"
	grandchildParent = "Bo"
	secret           = "cluster-test-hmac-secret-7d31a2"
	familyName       = "fam"
	// lease is the members' etcd lease, the default.
	lease = 3 * time.Second
	// waitLimit bounds every wait on a member.
	waitLimit = 60 * time.Second
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// world is one family's surroundings: etcd, the simulated Brama behind an
// observing proxy, the recording Las, and the configuration every member
// shares.
type world struct {
	t        testing.TB
	bin      string
	etcd     *etcdtest.Server
	env      map[string]string
	stateDir string
	records  string
	seen     *observer
	// names are the family's beings once it grew: the demo world's,
	// then any seeded (seed).
	names []string
	// spread is set when the members place each being on its own
	// (spreadOut).
	spread bool
	// seedRoot, when set, is what the seeded root has left besides what
	// it granted (default the demo world's 1); seedGrant, when set, is
	// what it granted each seeded child (default seedEndowment).
	seedRoot, seedGrant string
	// counted is what check knows of each being, by directory.
	counted map[string]*counting
	// held, while set, holds the simulated Brama's answers until it is
	// closed (startSpread).
	held atomic.Pointer[chan struct{}]
	// talking, while set, makes every being with the family tools
	// message its relative on every cycle, not only on the third.
	talking atomic.Bool
}

func newWorld(t testing.TB) *world {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	w := &world{t: t, bin: testkit.Singularity(t), etcd: etcdtest.Start(t), seen: newObserver(), names: slices.Clone(familyNames)}
	if dir := os.Getenv("CLUSTER_LOG_DIR"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o700), "CLUSTER_LOG_DIR")
		// etcd's whole log kept beside the members' (its temporary
		// directory goes with the test).
		t.Cleanup(func() {
			if data, err := os.ReadFile(w.etcd.LogPath()); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "etcd.log"), data, 0o600)
			}
		})
	}
	las := testkit.Build(t, "./test/crash/recordlas")
	dir := t.TempDir()
	w.env = testkit.ValidEnv(t, dir, secret)
	w.stateDir = w.env["SINGULARITY_STATE_DIR"]
	w.records = filepath.Join(dir, "deliveries")
	require.NoError(t, os.MkdirAll(w.records, 0o700))
	cfg, err := json.Marshal(struct {
		examplelas.Config
		RecordDir string `json:"record_dir"`
	}{examplelas.Config{Surfaces: []string{examplelas.SurfaceFinance, examplelas.SurfaceEcho, examplelas.SurfaceSkarbiec}}, w.records})
	require.NoError(t, err)
	lasCfg := filepath.Join(dir, "recordlas.json")
	require.NoError(t, os.WriteFile(lasCfg, cfg, 0o600))
	maps.Copy(w.env, map[string]string{
		"BRAMA_BASE_URL":                     w.brama(),
		"SINGULARITY_STARTING_BALANCE_USD":   "1",
		"SINGULARITY_INSTANCE_USD_PER_HOUR":  "0.36",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":  "0.15",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION": "0.6",
		"SINGULARITY_CYCLE_INTERVAL_SECS":    cycleInterval(t),
		"SINGULARITY_CONTEXT_MESSAGES":       "60",
		"SINGULARITY_SHUTDOWN_GRACE_SECS":    "2",
		"SINGULARITY_HTTP_TIMEOUT_SECS":      "20",
		"SINGULARITY_MCP_TIMEOUT_SECS":       "20",
		"SINGULARITY_STIMULUS":               "A simulated market opened nearby; local businesses want price surveys.",
		"SINGULARITY_REQUIRED_SURFACES":      "skarbiec,finance",
		"SINGULARITY_LOG_LEVEL":              "info",
		"SINGULARITY_LOG_FORMAT":             "text",
		"LAS_ONLY":                           "echo,skarbiec,finance",
		"LAS_COMMAND":                        las,
		"LAS_MCP_ENTRYPOINT":                 lasCfg,
		"SINGULARITY_CLUSTER_ETCD":           strings.Join(w.etcd.Endpoints(), ","),
		"SINGULARITY_CLUSTER_FAMILY":         familyName,
		"SINGULARITY_CLUSTER_LEASE_SECS":     fmt.Sprint(int(lease / time.Second)),
		// The whole family on one member, unless spreadOut.
		"SINGULARITY_CLUSTER_PLACEMENT": "family",
		// The holder compacts etcd's history every few seconds, so that
		// every cluster test runs with a history being compacted.
		"SINGULARITY_CLUSTER_COMPACT_SECS": fmt.Sprint(int(compactEvery / time.Second)),
	})
	return w
}

// answered tells the observer of an answer to being, once the answers
// are no longer held (startSpread), or held for waitLimit at most.
func (w *world) answered(being string) {
	if held := w.held.Load(); held != nil {
		select {
		case <-*held:
		case <-time.After(waitLimit):
		}
	}
	w.seen.see(being)
}

// talks says on which cycles the beings message their relatives.
func (w *world) talks(cycle int) bool {
	if w.talking.Load() {
		return simbrama.Talkative(cycle)
	}
	return cycle == 3
}

// brama starts the simulated Brama, which tells the observer which
// being each completion it answers is for.
func (w *world) brama() string {
	sim, err := simbrama.Start([]byte(secret), simbrama.Options{RootName: rootName, GrandchildParent: grandchildParent, Answered: w.answered, Talks: w.talks})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { sim.Close() })
	return sim.URL()
}

// observer counts completions per being and wakes whoever waits on a
// change.
type observer struct {
	mu      sync.Mutex
	count   map[string]int
	changed chan struct{}
}

func newObserver() *observer {
	return &observer{count: map[string]int{}, changed: make(chan struct{})}
}

func (o *observer) see(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count[name]++
	close(o.changed)
	o.changed = make(chan struct{})
}

func (o *observer) snapshot() (map[string]int, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.count), o.changed
}

// until waits, within limit, until cond holds of the counts.
func (o *observer) until(limit time.Duration, cond func(map[string]int) bool) bool {
	deadline := time.After(limit)
	for {
		counts, changed := o.snapshot()
		if cond(counts) {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// proc is one member process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	lines  *lineWatch
	exited chan struct{}
	err    error
}

// start runs `singularity run` as member name.
func (w *world) start(name string) *proc {
	w.t.Helper()
	return w.startWith(map[string]string{"SINGULARITY_CLUSTER_MEMBER": name})
}

// startWith runs `singularity run` with the world's environment changed
// by change.
func (w *world) startWith(change map[string]string) *proc {
	w.t.Helper()
	env := maps.Clone(w.env)
	env["SINGULARITY_DEBUG_ADDR"] = "127.0.0.1:0"
	maps.Copy(env, change)
	name := env["SINGULARITY_CLUSTER_MEMBER"]
	cmd := exec.Command(w.bin, "run")
	cmd.Env = testkit.Environ(env)
	p := &proc{name: name, cmd: cmd, lines: newLineWatch(), exited: make(chan struct{})}
	cmd.Stderr = p.lines
	if dir := os.Getenv("CLUSTER_LOG_DIR"); dir != "" {
		// Each member's whole stderr kept for reading after the run
		// (a name with a slash, which the refusal test tries, kept
		// with an underscore).
		f, err := os.OpenFile(filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		require.NoError(w.t, err)
		w.t.Cleanup(func() { _ = f.Close() })
		cmd.Stderr = io.MultiWriter(p.lines, f)
	}
	require.NoError(w.t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		p.lines.Close()
		close(p.exited)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// wait waits for the process's exit within limit and returns its code.
func (p *proc) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("member %s did not exit within %s; stderr:\n%s", p.name, limit, p.lines.Tail())
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("member %s: %v", p.name, p.err)
	return -1
}

// await waits, within limit, for a stderr line of the member containing
// text, seen after the member's line count was from.
func (p *proc) await(t testing.TB, text string, limit time.Duration) {
	t.Helper()
	if !p.lines.Await(text, limit) {
		t.Fatalf("member %s did not log %q within %s; %s", p.name, text, limit, p.dump(t))
	}
}

// dump ends a member that is stuck with SIGQUIT (the Go runtime prints
// every goroutine) and writes its whole stderr to a file that outlives
// the test, for the failure message.
func (p *proc) dump(t testing.TB) string {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.lines.mu.Lock()
	all := strings.Join(p.lines.all, "\n") + "\n" + string(p.lines.partial)
	p.lines.mu.Unlock()
	f, err := os.CreateTemp("", "cluster-"+p.name+"-*.stderr")
	if err != nil {
		return "stderr:\n" + p.lines.Tail()
	}
	defer f.Close()
	_, _ = f.WriteString(all)
	return "its stderr and goroutines are in " + f.Name() + "; the last lines:\n" + p.lines.Tail()
}

// lineWatch is a process's stderr: it keeps the last lines, for
// failures, and counts the lines containing each text asked about since
// the process started.
type lineWatch struct {
	mu      sync.Mutex
	partial []byte
	tail    []string
	all     []string       // every line
	counts  map[string]int // lines containing each text asked about
	closed  bool
	changed chan struct{}
}

func newLineWatch() *lineWatch {
	return &lineWatch{changed: make(chan struct{}), counts: map[string]int{}}
}

func (l *lineWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	end := bytes.LastIndexByte(l.partial, '\n') + 1
	for _, line := range strings.Split(string(l.partial[:end]), "\n") {
		if line == "" {
			continue
		}
		for text := range l.counts {
			if strings.Contains(line, text) {
				l.counts[text]++
			}
		}
		l.all = append(l.all, line)
		l.tail = append(l.tail, line)
	}
	l.partial = append([]byte(nil), l.partial[end:]...)
	if len(l.tail) > 400 {
		l.tail = slices.Clone(l.tail[len(l.tail)-200:])
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// Lines is every line so far.
func (l *lineWatch) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

func (l *lineWatch) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
}

// Count is how many lines contain text. The first count of a text reads
// every line so far; from then on lines are counted as they come.
func (l *lineWatch) Count(text string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.counts[text]
	if !ok {
		for _, line := range l.all {
			if strings.Contains(line, text) {
				n++
			}
		}
		l.counts[text] = n
	}
	return n
}

// AwaitCount waits within limit for n lines containing text.
func (l *lineWatch) AwaitCount(text string, n int, limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		found := l.Count(text) >= n
		l.mu.Lock()
		closed, changed := l.closed, l.changed
		l.mu.Unlock()
		switch {
		case found:
			return true
		case closed:
			return false
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// Await waits within limit for a line containing text.
func (l *lineWatch) Await(text string, limit time.Duration) bool {
	return l.AwaitCount(text, 1, limit)
}

// AwaitAll waits within limit for a line containing every one of texts.
func (l *lineWatch) AwaitAll(limit time.Duration, texts ...string) bool {
	deadline := time.After(limit)
	for seen := 0; ; {
		l.mu.Lock()
		lines, closed, changed := l.all[seen:], l.closed, l.changed
		seen = len(l.all)
		l.mu.Unlock()
		for _, line := range lines {
			if !slices.ContainsFunc(texts, func(text string) bool { return !strings.Contains(line, text) }) {
				return true
			}
		}
		if closed {
			return false
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// Tail is the last lines, for failures.
func (l *lineWatch) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail[max(0, len(l.tail)-40):], "\n")
}

// check judges the family's files as its next holder would, from the
// commit records in etcd: every being's trusted journal has no gap and no
// repeat (one writer at a time), and explains its money exactly; the
// being's state is its newest trusted checkpoint brought up to date; and
// every grant made exactly one child (requireGrantsMadeChildren). It
// returns the beings checked, by name.
func (w *world) check(t testing.TB) map[string]checked {
	t.Helper()
	// A child's registration commits with its parent's step: what was
	// registered before the walk is recorded by the walk's parents, and
	// what the walk's parents record is registered after it.
	var registered map[string]string
	if w.spread {
		registered = w.registrations(t)
	}
	beings := map[string]checked{}
	queue := []string{w.stateDir}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		rec := w.record(t, member.BeingID(w.stateDir, dir))
		b, grants := w.count(t, dir, rec)
		beings[b.Identity.Name] = checked{dir: dir, st: b, rec: rec, grants: grants}
		for _, c := range b.Mind.Children {
			child, err := state.ChildDir(dir, c)
			require.NoError(t, err)
			queue = append(queue, child)
		}
	}
	recorded := requireGrantsMadeChildren(t, beings)
	if w.spread {
		parentID := func(child string) string {
			return member.BeingID(w.stateDir, beings[recorded[child]].dir)
		}
		for child, parent := range registered {
			require.Contains(t, recorded, child, "child %s is registered in etcd, but no parent's committed life records its grant", child)
			require.Equal(t, parent, parentID(child), "child %s is registered under another parent than the one that records it", child)
		}
		after := w.registrations(t)
		for child, parent := range recorded {
			require.Contains(t, after, child, "%s's child %s is recorded, but not registered in etcd", parent, child)
			require.Equal(t, parentID(child), after[child], "child %s is registered under another parent than %s", child, parent)
		}
	}
	return beings
}

// requireGrantsMadeChildren requires that every grant in a being's
// trusted life made exactly one child: the children a being records
// (added, or granted and still being created) are those of its grants,
// one each; no child is recorded by two beings; and each child created
// started with what it was granted. It returns every recorded child's
// parent, by child id.
func requireGrantsMadeChildren(t testing.TB, beings map[string]checked) map[string]string {
	t.Helper()
	parents := map[string]string{}
	for name, b := range beings {
		children := map[string]bool{}
		for _, c := range b.st.Mind.Children {
			children[c.ID] = true
		}
		for _, g := range b.st.Grants {
			children[g.Child.ID] = true
		}
		for child := range children {
			_, granted := b.grants[child]
			require.True(t, granted, "%s records child %s, but its committed life has no grant to it", name, child)
			other, twice := parents[child]
			require.False(t, twice, "child %s is recorded by %s and by %s", child, other, name)
			parents[child] = name
		}
		for child := range b.grants {
			require.True(t, children[child], "%s's grant to %s made no child", name, child)
		}
		for _, c := range b.st.Mind.Children {
			kid, ok := beings[c.Name]
			require.True(t, ok, "%s's child %s was not found", name, c.Name)
			require.True(t, kid.st.Budget.Starting.Equal(b.grants[c.ID]), "%s started with %s, but %s granted it %s",
				c.Name, kid.st.Budget.Starting, name, b.grants[c.ID])
		}
	}
	return parents
}

// registrations are the children registered in etcd (beings spread over
// members): their parents' ids by child id.
func (w *world) registrations(t testing.TB) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := fence.Root + familyName + "/being/"
	resp, err := w.etcd.Client(t).Get(ctx, prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out
}

// counting is what check knows of a being from its earlier looks: its
// state as of seq, and what its trusted life moved in money so far. A
// committed event stays committed, so a later look reads only what was
// committed since.
type counting struct {
	st     *state.Being
	seq    uint64
	totals state.MoneyTotals
	// grants are the endowments of its trusted life, by child id.
	grants map[string]money.Amount
}

// grant adds the endowments among events to c.grants; a child granted
// twice fails the test.
func (c *counting) grant(t testing.TB, dir string, events []state.Event) {
	t.Helper()
	for _, e := range events {
		if e.Type != state.EventEndowmentGranted || e.Child == nil {
			continue
		}
		_, twice := c.grants[e.Child.ID]
		require.False(t, twice, "being %s: child %s granted twice (seq %d)", dir, e.Child.ID, e.Seq)
		c.grants[e.Child.ID] = e.Amount
	}
}

// count judges the being in dir by rec: the first time its whole
// trusted life (fence.Counted: no gap and no repeat, one writer at a
// time), later only the events committed since, which must follow on
// with no gap; every time, its money is explained exactly by its life.
// It returns the being's state and the endowments of its trusted life,
// by child id.
func (w *world) count(t testing.TB, dir string, rec fence.Record) (*state.Being, map[string]money.Amount) {
	t.Helper()
	if w.counted == nil {
		w.counted = map[string]*counting{}
	}
	c := w.counted[dir]
	if c == nil {
		b, life, err := fence.Counted(dir, rec)
		require.NoError(t, err, "being %s", dir)
		c = &counting{st: b, seq: b.Seq(), totals: state.Totals(life), grants: map[string]money.Amount{}}
		c.grant(t, dir, life)
		w.counted[dir] = c
	} else {
		events, through, err := fence.TrustedPast(dir, rec, c.seq, -1)
		require.NoError(t, err, "being %s", dir)
		for i, e := range events {
			if want := c.seq + uint64(i) + 1; e.Seq != want {
				t.Fatalf("being %s: its trusted life goes on with seq %d where %d was due: a gap or a repeat", dir, e.Seq, want)
			}
			c.st.Apply(e)
		}
		c.grant(t, dir, events)
		c.totals = c.totals.Plus(state.Totals(events))
		c.seq = max(c.seq, through)
	}
	require.NoError(t, testkit.CheckTotals(c.st.Budget, c.totals), "being %s (%s)", c.st.Identity.Name, dir)
	st := *c.st
	return &st, maps.Clone(c.grants)
}

// checked is a being as check judged it: its directory, its state, the
// commit record it was judged by and the endowments of its trusted life
// by child id.
type checked struct {
	dir    string
	st     *state.Being
	rec    fence.Record
	grants map[string]money.Amount
}

// holderEvents are the events the holder of token wrote for the being
// in dir, in order.
func holderEvents(t testing.TB, dir string, token uint64) []state.Event {
	t.Helper()
	holdings, err := state.Holdings(dir)
	require.NoError(t, err)
	for _, h := range holdings {
		if h.Token == token {
			events, err := state.ReadHolding(h)
			require.NoError(t, err)
			return events
		}
	}
	return nil
}

// tokens are the tokens of the holders that wrote files for the being
// in dir, oldest first (0: what was written before any holder).
func tokens(t testing.TB, dir string) []uint64 {
	t.Helper()
	holdings, err := state.Holdings(dir)
	require.NoError(t, err)
	var out []uint64
	for _, h := range holdings {
		out = append(out, h.Token)
	}
	return out
}

// judge reads every holding of the being in dir and trusts its events by
// rec: the trusted events in order, and the judgement.
func judge(t testing.TB, dir string, rec fence.Record) ([]state.Event, fence.Trust) {
	t.Helper()
	all, written, err := fence.ReadHoldings(dir)
	require.NoError(t, err)
	trust, err := fence.TrustJournal(written, rec)
	require.NoError(t, err, "the journal of %s, trusted without a gap or a repeat", dir)
	var life []state.Event
	for i, e := range all {
		if trust.Trusted(written[i]) {
			life = append(life, e)
		}
	}
	return life, trust
}

// deliveries checks that no tool call reached a Las twice: the scripted
// arguments name the being and the cycle, so one key twice is one call
// delivered twice. It returns how many there were.
func (w *world) deliveries(t testing.TB) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(w.records, "las-*.jsonl"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		end := bytes.LastIndexByte(data, '\n') + 1
		for _, line := range strings.Split(string(data[:end]), "\n") {
			if line == "" {
				continue
			}
			var d struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &d))
			var args bytes.Buffer
			require.NoError(t, json.Compact(&args, d.Arguments))
			key := d.Tool + " " + args.String()
			require.False(t, seen[key], "the call %s reached a Las twice", key)
			seen[key] = true
		}
	}
	return len(seen)
}

// status runs `singularity status --format json` on the family as its
// commit records count it, and returns its beings' remaining money by
// name and the family ledger's verdict.
func (w *world) status(t testing.TB) (map[string]string, string) {
	t.Helper()
	out := w.runStatus(t, "--format", "json")
	var report struct {
		Beings []struct {
			Name      string `json:"name"`
			Remaining string `json:"remaining"`
		} `json:"beings"`
		FamilyLedger string `json:"family_ledger"`
	}
	require.NoError(t, json.Unmarshal(out, &report))
	remaining := map[string]string{}
	for _, b := range report.Beings {
		remaining[b.Name] = b.Remaining
	}
	return remaining, report.FamilyLedger
}

// debugURL is the member's debug endpoint, as its log says (it serves
// one while it holds the family).
func (p *proc) debugURL(t testing.TB) string {
	t.Helper()
	p.await(t, "debug endpoint listening", waitLimit)
	p.lines.mu.Lock()
	defer p.lines.mu.Unlock()
	for i := len(p.lines.all) - 1; i >= 0; i-- {
		line := p.lines.all[i]
		if _, rest, ok := strings.Cut(line, "url=http://"); ok && strings.Contains(line, "debug endpoint listening") {
			addr, _, _ := strings.Cut(rest, "/")
			return "http://" + addr
		}
	}
	t.Fatalf("member %s logged no debug url", p.name)
	return ""
}

// get reads url within a deadline.
func get(t testing.TB, url string) []byte {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// holder is the name of the member whose lease holds the root's lock
// (the oldest lock key), or "" when none does.
func (w *world) holder(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := w.etcd.Client(t)
	lockPrefix := fence.Root + familyName + "/lock/" + member.RootBeing + "/"
	locks, err := client.Get(ctx, lockPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	require.NoError(t, err)
	if len(locks.Kvs) == 0 {
		return ""
	}
	lease := strings.TrimPrefix(string(locks.Kvs[0].Key), lockPrefix)
	records, err := client.Get(ctx, fence.Root+familyName+"/member/", clientv3.WithPrefix())
	require.NoError(t, err)
	for _, kv := range records.Kvs {
		var info member.Info
		require.NoError(t, json.Unmarshal(kv.Value, &info))
		if info.Lease == lease {
			return info.Name
		}
	}
	return ""
}

// runStatus runs `singularity status` with args on the family as its
// commit records count it and returns what it printed.
func (w *world) runStatus(t testing.TB, args ...string) []byte {
	t.Helper()
	return w.runReader(t, "status", args...)
}

// requireJournal runs `singularity journal --format json` on the family
// as its commit records count it, and requires that it printed each
// being of beings (as check judged them) exactly its trusted life: every
// committed event, in seq order, byte for byte, and nothing else.
func (w *world) requireJournal(t testing.TB, beings map[string]checked) {
	t.Helper()
	printed := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(w.runReader(t, "journal", "--format", "json"))), "\n") {
		var head struct {
			ID string `json:"being_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), "journal line %q", line)
		printed[head.ID] = append(printed[head.ID], line)
	}
	total := 0
	for name, b := range beings {
		id := filepath.Base(b.dir)
		if b.dir == w.stateDir {
			id = b.st.Identity.AgentID
		}
		_, life, err := fence.Counted(b.dir, b.rec)
		require.NoError(t, err)
		var want []string
		for _, e := range life {
			l, err := journalview.LineOf(e)
			require.NoError(t, err)
			want = append(want, string(journalview.JSON(name, id, l)))
		}
		require.Equal(t, want, printed[id], "journal of %s", name)
		delete(printed, id)
		total += len(want)
	}
	require.Empty(t, printed, "journal printed beings the family does not have")
	t.Logf("singularity journal printed the %d committed events of %d beings, and nothing else", total, len(beings))
}

// requireDebugJournal asks the holder's debug endpoint at base for the
// root being's journal and requires that it served the committed events
// only, the newest of them included: every line served is the trusted
// event of its seq, and none is older than the last event committed
// before the request.
func (w *world) requireDebugJournal(t testing.TB, base string) {
	t.Helper()
	life := func() []state.Event {
		rec := w.record(t, member.RootBeing)
		_, life, err := fence.Counted(w.stateDir, rec)
		require.NoError(t, err)
		return life
	}
	before := life()
	require.NotEmpty(t, before)
	served := strings.Split(strings.TrimSpace(string(get(t, base+"/debug/beings/"+testkit.Identity().AgentID+"/journal?tail=1000"))), "\n")
	after := map[uint64]state.Event{}
	for _, e := range life() {
		after[e.Seq] = e
	}
	var last uint64
	for _, line := range served {
		var got struct {
			Type string     `json:"type"`
			Seq  uint64     `json:"seq"`
			At   state.Time `json:"at"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &got), "debug journal line %q", line)
		e, ok := after[got.Seq]
		require.True(t, ok, "the debug endpoint served event %d, which is not committed", got.Seq)
		require.Equal(t, e.Type, got.Type, "event %d", got.Seq)
		require.True(t, e.At.Equal(got.At.Time), "event %d", got.Seq)
		last = max(last, got.Seq)
	}
	require.GreaterOrEqual(t, last, before[len(before)-1].Seq, "the debug endpoint serves the newest committed events")
}

// record is the commit record of being id as etcd holds it now.
func (w *world) record(t testing.TB, id string) fence.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := w.etcd.Client(t).Get(ctx, fence.Root+familyName+"/commit/"+id)
	require.NoError(t, err)
	var rec fence.Record
	if len(resp.Kvs) > 0 {
		require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &rec))
	}
	return rec
}

// runReader runs the reading command (status, journal) with args on the
// family as its commit records count it and returns what it printed.
func (w *world) runReader(t testing.TB, command string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(w.bin, append([]string{command}, args...)...)
	cmd.Env = w.readerEnv()
	out, err := cmd.Output()
	require.NoError(t, err)
	return out
}

// cycleInterval is CLUSTER_CYCLE_SECS, the beings' pause between
// cycles in the cluster tests (SINGULARITY_CYCLE_INTERVAL_SECS;
// default 0.05, twenty rounds a second at most).
func cycleInterval(t testing.TB) string {
	v := os.Getenv("CLUSTER_CYCLE_SECS")
	if v == "" {
		return "0.05"
	}
	secs, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err, "CLUSTER_CYCLE_SECS")
	require.True(t, secs >= 0 && secs < 60, "CLUSTER_CYCLE_SECS is seconds from 0 to 60")
	return v
}

// compactEvery is how often the holders compact etcd's history in the
// cluster tests (SINGULARITY_CLUSTER_COMPACT_SECS).
const compactEvery = 5 * time.Second

// requireCompacted requires that, while a member holds the family,
// etcd's history is compacted past its first revision within a few
// periods, as a holder does (docs/cluster.md#etcds-history).
func (w *world) requireCompacted(t testing.TB) {
	t.Helper()
	client := w.etcd.Client(t)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), compactEvery)
		defer cancel()
		_, err := client.Get(ctx, fence.Root, clientv3.WithRev(1))
		return errors.Is(err, rpctypes.ErrCompacted)
	}, 4*compactEvery, 100*time.Millisecond, "the holder compacts etcd's history")
}

// members are the names of the family's member records in etcd.
func (w *world) members(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := fence.Root + familyName + "/member/"
	resp, err := w.etcd.Client(t).Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var names []string
	for _, kv := range resp.Kvs {
		names = append(names, strings.TrimPrefix(string(kv.Key), prefix))
	}
	return names
}

// requireStandbyTree asks the debug endpoint of standby, a member that
// does not hold the family, for the actor tree, and requires that it
// shows the whole family as holder runs it: the family node names the
// holder, and so does every being of it.
func (w *world) requireStandbyTree(t testing.TB, standby, holder *proc) {
	t.Helper()
	type node struct {
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		Member   string `json:"member"`
		Children []node `json:"children"`
	}
	var tree node
	raw := get(t, standby.debugURL(t)+"/debug/actors")
	require.NoError(t, json.Unmarshal(raw, &tree), "standby %s served %.200q", standby.name, raw)
	require.Equal(t, "family", tree.Kind)
	require.Equal(t, holder.name, tree.Member, "standby %s shows the family node of its holder", standby.name)
	beings := 0
	var walk func(n node)
	walk = func(n node) {
		if n.Kind == "being" {
			beings++
			require.Equal(t, holder.name, n.Member, "standby %s: being %s runs on the holder", standby.name, n.Name)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree)
	require.GreaterOrEqual(t, beings, len(w.names), "standby %s shows every being", standby.name)
}

// requireStatus requires `singularity status` to count the family as
// check judged it (beings): every being's remaining money, and the
// family ledger exact.
func (w *world) requireStatus(t testing.TB, beings map[string]checked) {
	t.Helper()
	remaining, verdict := w.status(t)
	require.Equal(t, "exact", verdict, "status counts no uncommitted step")
	require.Len(t, remaining, len(beings))
	for name, b := range beings {
		require.Equal(t, b.st.Budget.Remaining.String(), remaining[name], "status of %s", name)
	}
}

// requireAlive fails the test for a member that exited by itself
// before blow.
func requireAlive(t testing.TB, members []*proc, blow int) {
	t.Helper()
	for _, m := range members {
		select {
		case <-m.exited:
			t.Fatalf("before blow %d: member %s exited by itself (%v); %s", blow, m.name, m.err, m.dump(t))
		default:
		}
	}
}

// stopInTurn SIGTERMs each member and waits for it to exit 0 before the
// next: a spread family's last member stops its beings children first.
func stopInTurn(t testing.TB, members ...*proc) {
	t.Helper()
	for _, p := range members {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, waitLimit), "member %s stops", p.name)
	}
}

// summaryOf is the run summary member p ended with
// (docs/cluster.md#the-end-of-a-member): what each being's line says
// after its name, by name.
func summaryOf(t testing.TB, p *proc) map[string]string {
	t.Helper()
	lines := p.lines.Lines()
	head := slices.Index(lines, "run ended on member "+p.name+":")
	require.NotEqual(t, -1, head, "member %s ended without a run summary; stderr:\n%s", p.name, p.lines.Tail())
	out := map[string]string{}
	for _, line := range lines[head+1:] {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		name, said, ok := strings.Cut(strings.TrimSpace(line), ": ")
		require.True(t, ok, "a summary line: %q", line)
		out[name] = said
	}
	return out
}
