package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// standaloneWorld is a first hour without the Wisent fleet: a keyless
// OpenAI-compatible server, a servers file naming the example Las, a
// state directory and a workspace, and no identity variable, release pin
// or required surface at all.
func standaloneWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		t:      t,
		dir:    dir,
		lasBin: testkit.ExampleLas(t),
		brama:  bramatest.Start(t, bramatest.Config{Auth: "none", Models: []string{"local-model"}}),
	}
	w.stateDir = filepath.Join(dir, "state")
	w.lasCfg = filepath.Join(dir, "las.json")
	require.NoError(t, os.WriteFile(w.lasCfg, []byte(`{}`), 0o600))
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"lab": map[string]any{"command": w.lasBin, "args": []string{w.lasCfg}},
	}})
	require.NoError(t, err)
	serversFile := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(serversFile, servers, 0o600))
	workspace := filepath.Join(dir, "workspace")
	require.NoError(t, os.Mkdir(workspace, 0o700))
	w.env = map[string]string{
		"PATH":                               os.Getenv("PATH"),
		"HOME":                               dir,
		"BRAMA_AUTH":                         "none",
		"BRAMA_BASE_URL":                     w.brama.URL,
		"BRAMA_MODEL":                        "local-model",
		"BRAMA_INPUT_PRICE_USD_PER_MILLION":  "1",
		"BRAMA_OUTPUT_PRICE_USD_PER_MILLION": "2",
		"LAS_SERVERS_FILE":                   serversFile,
		"SINGULARITY_STATE_DIR":              w.stateDir,
		"SINGULARITY_WORKSPACE":              workspace,
		"SINGULARITY_CYCLE_INTERVAL_SECS":    "0.05",
		"SINGULARITY_SHUTDOWN_GRACE_SECS":    "2",
	}
	return w
}

// TestStandaloneFirstHour: with BRAMA_AUTH=none and a servers file, doctor,
// once, status, journal and run --resume need no identity variable and no
// release pin; the agent id is generated once, kept in the state and seen
// alike by every command; a gateway that refuses a request with 400 fails
// that cycle only, and the running being recovers when the gateway
// answers again, paying exactly for what it was served; /metrics names
// the build and exports the Las restart counter at 0.
func TestStandaloneFirstHour(t *testing.T) {
	t.Parallel()
	w := standaloneWorld(t)

	doctor := w.run("doctor")
	require.Equal(t, 0, doctor.code, doctor.stderr)
	assert.Regexp(t, `^\{"ok":true,"brama_model":"local-model","most":null,"las_tools":(\d+),"servers":\[\{"name":"lab","tools":(\d+)\}\]\}\n$`, doctor.stdout)
	assert.NoDirExists(t, w.stateDir, "doctor writes no state")

	w.brama.Enqueue(bramatest.TextReply("hello", bramatest.Usage(1000, 100)))
	once := w.run("once")
	require.Equal(t, 0, once.code, once.stderr)
	id := w.loadState().Identity
	_, err := uuid.Parse(id.AgentID)
	require.NoError(t, err, "a generated agent id: %q", id.AgentID)
	assert.Equal(t, state.Identity{
		AgentID: id.AgentID, Name: "MyAgent", Ticker: "AGENT", AgentType: "general", Specialty: "general",
		Role: config.DefaultRole, Environment: config.DefaultEnvironment, Host: config.HostIdentifier(), WorkloadID: config.DefaultWorkloadID,
	}, id)

	st := w.run("status", "--format", "json")
	require.Equal(t, 0, st.code, st.stderr)
	var status struct {
		Beings []struct{ ID string } `json:"beings"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &status))
	require.Len(t, status.Beings, 1)
	assert.Equal(t, id.AgentID, status.Beings[0].ID, "status names the being by its id")
	table := w.run("status")
	assert.Contains(t, table.stdout, "\nfamily: 1 being, starting 10,")

	// run --resume: the first request is refused, later ones answered.
	var served atomic.Int32
	w.brama.SetHandler(func(*bramatest.Request) bramatest.Reply {
		if served.Add(1) == 1 {
			return bramatest.ErrorReply(http.StatusBadRequest, "context window exceeded")
		}
		return bramatest.TextReply("back", bramatest.Usage(1000, 100))
	})
	w.env["SINGULARITY_DEBUG_ADDR"] = "127.0.0.1:0"
	p := w.start("run", "--resume")
	p.stderr.waitFor(t, "debug endpoint listening", waitLimit)
	events := w.waitJournal(waitLimit, "a completion after the refusal", func(events []state.Event) bool {
		return testkit.Count(events, state.EventModelCompleted) >= 3
	})
	base := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/debug/`).FindStringSubmatch(p.stderr.String())
	require.Len(t, base, 2, p.stderr.String())
	res, err := http.Get(base[1] + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^singularity_build_info\{go_version="go[^"]+",revision="[^"]+",version="[^"]+"\} 1$`, string(body))
	assert.Regexp(t, `(?m)^singularity_las_restarts_total\{being="MyAgent-[0-9a-f]{8}",server="las"\} 0$`, string(body))
	p.signal(os.Interrupt)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, "the refusal did not end the being: %s", r.stderr)

	var warnings []string
	for _, e := range w.journal() {
		if e.Type == state.EventWarning {
			warnings = append(warnings, e.Message)
		}
	}
	assert.Contains(t, warnings, "brama: HTTP 400: context window exceeded")
	final := w.loadState()
	assert.Equal(t, id, final.Identity, "run --resume kept the generated identity")
	assert.Equal(t, state.StatusStopped, final.Status)
	events = w.journal()
	require.NoError(t, testkit.CheckInvariant(final.Budget, events))
	debits := testkit.Count(events, state.EventCostDebited)
	assert.Equal(t, testkit.Count(events, state.EventModelCompleted), debits, "each answer debited once, the refusal never")
	spent := testkit.USD("0.0012").Mul(money.FromInt(int64(debits)))
	assert.Equal(t, testkit.USD("10").Sub(spent).String(), final.Budget.Remaining.String(), "0.0012 per answer, exactly")

	j := w.run("journal", "--tail", "3")
	require.Equal(t, 0, j.code, j.stderr)
	assert.Len(t, strings.Split(strings.TrimSuffix(j.stdout, "\n"), "\n"), 3)
}
