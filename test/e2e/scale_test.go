package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// spawnPolicy is a zero-latency gateway's script that grows a family by
// spawning (docs/family.md#spawning): each being, on its first request,
// endows up to fanOut children with a share of its balance, until the
// family has beings members; every other request gets a plain reply. It
// tells when every being of the full family has asked for a completion.
type spawnPolicy struct {
	beings, fanOut int

	mu       sync.Mutex
	planned  int             // beings spawned or asked to be, the root included
	seen     map[string]bool // beings that asked for a completion
	everyone chan struct{}
}

func newSpawnPolicy(beings, fanOut int) *spawnPolicy {
	return &spawnPolicy{beings: beings, fanOut: fanOut, planned: 1, seen: map[string]bool{}, everyone: make(chan struct{})}
}

var (
	nameInPrompt   = regexp.MustCompile(`^You are (\S+), an autonomous`)
	balanceInFrame = regexp.MustCompile(`Balance: (\S+) USD`)
	endowmentCents = money.FromInt(100)
)

func (p *spawnPolicy) reply(r *bramatest.Request) bramatest.Reply {
	msgs := r.Completion.Messages
	m := nameInPrompt.FindStringSubmatch(msgs[0].Content)
	if m == nil {
		return bramatest.TextReply("resting", bramatest.Usage(10, 2))
	}
	name := m[1]
	p.mu.Lock()
	defer p.mu.Unlock()
	first := !p.seen[name]
	if first {
		p.seen[name] = true
		if len(p.seen) == p.beings {
			close(p.everyone)
		}
	}
	n := min(p.fanOut, p.beings-p.planned)
	if !first || n <= 0 || msgs[len(msgs)-1].Role != chat.RoleUser {
		return bramatest.TextReply("resting", bramatest.Usage(10, 2))
	}
	var balance money.Amount
	for i := len(msgs) - 1; i >= 0; i-- {
		if b := balanceInFrame.FindStringSubmatch(msgs[i].Content); b != nil {
			balance = testkit.USD(b[1])
			break
		}
	}
	// An equal share for each child and one for the parent, in cents.
	share := balance.QuoDown(money.FromInt(int64(n + 1))).Mul(endowmentCents)
	cents, _ := strconv.ParseInt(strings.SplitN(share.String(), ".", 2)[0], 10, 64)
	if cents <= 0 {
		return bramatest.TextReply("resting", bramatest.Usage(10, 2))
	}
	endowment := money.FromInt(cents).QuoDown(endowmentCents).String()
	calls := make([]chat.ToolCall, n)
	for i := range calls {
		child := fmt.Sprintf("%s-%d", name, i)
		calls[i] = bramatest.Call(fmt.Sprintf("s-%s", child), "singularity_spawn_child",
			fmt.Sprintf(`{"name":%q,"ticker":"C","specialty":"growing the family","endowment_usd":%q}`, child, endowment))
	}
	p.planned += n
	return bramatest.ToolCallsReply(bramatest.Usage(10, 2), calls...)
}

// TestRunGrowsAFamilyBySpawning is docs/family.md's family of thousands
// as an operator runs it: `singularity run` with a servers file holding
// no servers (built-in tools only), against a zero-latency gateway whose
// script has every being endow children until the family has
// SCALE_RUN_BEINGS beings (300 in the normal suite; `make scale-run`
// asks for 10,000). Then the debug tree and `singularity status` are read
// over the whole family, and both find every being and an exact family
// ledger: every child's money came from its parent.
func TestRunGrowsAFamilyBySpawning(t *testing.T) {
	t.Parallel()
	beings := 300
	if v := os.Getenv("SCALE_RUN_BEINGS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "SCALE_RUN_BEINGS")
		beings = n
	}
	policy := newSpawnPolicy(beings, 10)
	srv := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), DiscardRequests: true})
	srv.SetHandler(policy.reply)

	dir := t.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "scale-run-"); err == nil {
		dir = shm // a tmpfs: the test measures the family, not the disk
		t.Cleanup(func() { os.RemoveAll(shm) })
	}
	env := testkit.ValidEnv(t, dir, secretValue)
	servers := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(servers, []byte(`{"mcpServers": {}}`), 0o600))
	for k, v := range map[string]string{
		"LAS_SERVERS_FILE":                   servers,
		"SINGULARITY_REQUIRED_SURFACES":      "",
		"SINGULARITY_STARTING_BALANCE_USD":   "1000000",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":  "0.15",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION": "0.6",
		"SINGULARITY_CYCLE_INTERVAL_SECS":    "2",
		"SINGULARITY_HTTP_TIMEOUT_SECS":      "60",
		"SINGULARITY_DEBUG_ADDR":             "127.0.0.1:0",
		"BRAMA_BASE_URL":                     srv.URL,
	} {
		env[k] = v
	}
	stateDir := env["SINGULARITY_STATE_DIR"]

	cmd := exec.Command(testkit.Singularity(t), "run")
	cmd.Env = testkit.Environ(env)
	stderr := newSyncBuffer()
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	stderr.waitFor(t, "debug endpoint listening", waitLimit)
	u := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/debug/`).FindStringSubmatch(stderr.String())
	require.NotNil(t, u, stderr.String())

	grown := time.Now()
	select {
	case <-policy.everyone:
	case err := <-done:
		t.Fatalf("run ended before the family grew: %v\n%s", err, stderr.String())
	case <-time.After(10 * time.Minute):
		policy.mu.Lock()
		n := len(policy.seen)
		policy.mu.Unlock()
		t.Fatalf("only %d of %d beings asked for a completion", n, beings)
	}
	t.Logf("%d beings alive and thinking %v after the debug endpoint came up", beings, time.Since(grown).Round(time.Millisecond))

	// The live tree: every being, and the family's books exact.
	began := time.Now()
	res, err := http.Get(u[1] + "/debug/actors")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	treeTook := time.Since(began)
	var tree map[string]any
	require.NoError(t, json.Unmarshal(body, &tree))
	count := 0
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["kind"] == "being" {
			count++
		}
		kids, _ := n["children"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(tree)
	assert.Equal(t, beings, count, "the debug tree shows every being")
	assert.Equal(t, "exact", tree["family_ledger"], "the live family ledger")

	// The same family read offline, while it runs.
	began = time.Now()
	st := exec.Command(testkit.Singularity(t), "status", "--state-dir", stateDir, "--format", "json")
	out, err := st.Output()
	require.NoError(t, err)
	statusTook := time.Since(began)
	var status struct {
		Totals struct {
			Beings int
		}
		FamilyLedger string `json:"family_ledger"`
	}
	require.NoError(t, json.Unmarshal(out, &status))
	assert.Equal(t, beings, status.Totals.Beings)
	assert.Equal(t, "exact", status.FamilyLedger)
	t.Logf("over %d beings: /debug/actors answered in %v (%d KB), singularity status in %v",
		beings, treeTook.Round(time.Millisecond), len(body)>>10, statusTook.Round(time.Millisecond))

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-done:
		require.NoError(t, err, "run stops cleanly")
	case <-time.After(5 * time.Minute):
		t.Fatal("run did not stop")
	}
}
