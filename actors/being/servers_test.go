package being_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// withNPMServers gives the being a servers file's worth of real
// third-party MCP servers (test/peers): server-filesystem confined to the
// workspace by roots alone (no directory argument), server-memory and
// server-everything.
func withNPMServers(t *testing.T, opts *being.Options) {
	t.Helper()
	fs := testkit.NPMServer(t, "server-filesystem")
	mem := testkit.NPMServer(t, "server-memory")
	every := testkit.NPMServer(t, "server-everything")
	opts.MCPTimeout = 20 * time.Second
	opts.Las = &las.Options{
		Servers: []las.Server{
			{Name: "filesystem", Command: "node", Args: []string{fs}},
			{Name: "memory", Command: "node", Args: []string{mem}, Env: []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}},
			{Name: "everything", Command: "node", Args: []string{every}},
		},
		Workspace:        opts.Workspace,
		RequiredSurfaces: []string{"filesystem", "memory"},
		CallTimeout:      opts.MCPTimeout,
		ShutdownGrace:    2 * time.Second,
		PingInterval:     -1,
		Logger:           quiet,
	}
}

// TestServersFileNPMServers: one being, three real npm MCP servers, a
// tool of each called in one cycle. The filesystem server works inside
// the workspace it got through roots/list; write_file then read_file
// round-trips with nothing withheld (its absolute paths come back
// relative), list_directory's "[FILE] …" text reaches the model, and
// killing one server's process restarts that server only.
func TestServersFileNPMServers(t *testing.T) {
	opts := options(t, being.Once)
	withNPMServers(t, &opts)
	ws := opts.Workspace
	file := filepath.Join(ws, "notes", "a.txt")
	srv := newBrama(t)
	srv.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(10, 5),
			bramatest.Call("dir", "filesystem__create_directory", `{"path":`+quoteJSON(filepath.Join(ws, "notes"))+`}`),
			bramatest.Call("write", "filesystem__write_file", `{"path":`+quoteJSON(file)+`,"content":"hello from a being"}`),
			bramatest.Call("remember", "memory__create_entities", `{"entities":[{"name":"Ada","entityType":"being","observations":["writes notes"]}]}`),
			bramatest.Call("echo", "everything__echo", `{"message":"hi everything"}`),
		),
		bramatest.ToolCallsReply(bramatest.Usage(10, 5),
			bramatest.Call("read", "filesystem__read_file", `{"path":`+quoteJSON(file)+`}`),
			bramatest.Call("list", "filesystem__list_directory", `{"path":`+quoteJSON(filepath.Join(ws, "notes"))+`}`),
			bramatest.Call("graph", "memory__read_graph", `{}`),
		),
		bramatest.TextReply("done", bramatest.Usage(10, 5)),
	)
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	require.Equal(t, being.ReportCompleted, r.Status)

	// The catalogue the model saw: every server's tools under its name.
	reqs := srv.Completions()
	require.Len(t, reqs, 3)
	names := map[string]bool{}
	for _, tl := range reqs[0].Completion.Tools {
		names[tl.Function.Name] = true
	}
	for _, want := range []string{"filesystem__write_file", "filesystem__list_directory", "memory__create_entities", "everything__echo", "singularity_file_read"} {
		assert.True(t, names[want], want)
	}

	results := toolMessages(reqs[2].Completion.Messages)
	for id, content := range results {
		assert.NotContains(t, content, "sensitive_output_rejected", id)
		assert.Contains(t, content, `"status":"success"`, id)
		assert.NotContains(t, content, ws, "%s: workspace paths come back relative", id)
	}
	assert.Contains(t, results["write"], "notes/a.txt")
	assert.Contains(t, results["read"], "hello from a being")
	assert.Contains(t, results["list"], "[FILE] a.txt")
	assert.Contains(t, results["echo"], "hi everything")
	assert.Contains(t, results["graph"], "writes notes")
	assert.Equal(t, "hello from a being", readFile(t, file))

	// Kill the memory server's process: memory alone restarts.
	before := serverPIDs(t, h)
	require.NoError(t, syscall.Kill(before["memory"], syscall.SIGKILL))
	require.Eventually(t, func() bool {
		now := serverPIDs(t, h)
		return now["memory"] != 0 && now["memory"] != before["memory"]
	}, waitLimit, 20*time.Millisecond)
	after := serverPIDs(t, h)
	assert.Equal(t, before["filesystem"], after["filesystem"])
	assert.Equal(t, before["everything"], after["everything"])
	restarts := serverFigures(t, h, "restarts")
	assert.Equal(t, map[string]int{"filesystem": 0, "memory": 1, "everything": 0}, restarts)
	h.shutdown()
}

// toolMessages maps each tool message of msgs by its call id.
func toolMessages(msgs []chat.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		if m.Role == chat.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serverPIDs is each server's process id, from the debug descriptions.
func serverPIDs(t *testing.T, h *harness) map[string]int {
	return serverFigures(t, h, "process_id")
}

func serverFigures(t *testing.T, h *harness, figure string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range []string{"filesystem", "memory", "everything"} {
		pid := h.system.NewLocalPID("family/" + family.RootName + "/las/" + name)
		res, err := h.system.Root.RequestFuture(pid, messages.DescribeRequest{}, waitLimit).Result()
		require.NoError(t, err)
		d := res.(messages.Description)
		v, _ := d.Figures[figure].(int)
		out[name] = v
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// exampleServer is a servers-file entry running the example Las with cfg.
func exampleServer(t *testing.T, name, cfg string) las.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".json")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return las.Server{Name: name, Command: testkit.ExampleLas(t), Args: []string{path}}
}

// TestLasFailingAtEveryBoot: a Las that crashes at every boot, or never
// answers initialize, is restarted; past the intensity a being without
// required surfaces lives on built-in tools with the warning, one with
// required surfaces fails its boot with the spec's sentence (exit 3).
// Both for the classic single Las and for a server of a servers file
// (whose healthy neighbour stays).
func TestLasFailingAtEveryBoot(t *testing.T) {
	fast := supervision.LasConfig{Backoff: supervision.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}}
	tests := []struct {
		name     string
		cfg      string
		servers  bool
		required []string
		warning  string
		fails    string
	}{
		{name: "classic crash, nothing required", cfg: `{"exit_on_start":true}`, warning: "Las unavailable: restart intensity exceeded"},
		{name: "classic crash, finance required", cfg: `{"exit_on_start":true}`, required: []string{"finance"}, fails: "mcp: required Las surface unavailable: finance"},
		{name: "server crash, nothing required", cfg: `{"exit_on_start":true}`, servers: true, warning: "Las broken unavailable: restart intensity exceeded"},
		{name: "server crash, it is required", cfg: `{"exit_on_start":true}`, servers: true, required: []string{"good", "broken"}, fails: "mcp: required Las surface unavailable: broken"},
		{name: "server hangs on initialize", cfg: `{"hang_on_initialize":true}`, servers: true, warning: "Las broken unavailable: restart intensity exceeded"},
		{name: "classic hangs on initialize", cfg: `{"hang_on_initialize":true}`, warning: "Las unavailable: restart intensity exceeded"},
		{name: "classic hangs, finance required", cfg: `{"hang_on_initialize":true}`, required: []string{"finance"}, fails: "mcp: required Las surface unavailable: finance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := options(t, being.Once)
			if tt.servers {
				opts.Las = &las.Options{
					Servers:          []las.Server{exampleServer(t, "good", `{"surfaces":["echo"]}`), exampleServer(t, "broken", tt.cfg)},
					RequiredSurfaces: tt.required,
					CallTimeout:      300 * time.Millisecond,
					BootTimeout:      waitLimit / 2,
					Supervision:      fast,
					PingInterval:     -1,
					Logger:           quiet,
				}
			} else {
				opts.MCPTimeout = 300 * time.Millisecond
				withExampleLas(t, &opts, tt.cfg)
				opts.Las.RequiredSurfaces = tt.required
			}
			srv := newBrama(t)
			srv.Enqueue(bramatest.TextReply("done", bramatest.Usage(1, 1)))
			h := start(t, srv, opts)
			if tt.fails != "" {
				stopped := h.stopped()
				require.Error(t, stopped.Err)
				assert.Equal(t, tt.fails, stopped.Err.Error())
				assert.Equal(t, 3, fault.ExitCode(stopped.Err))
				return
			}
			r := h.report()
			require.NoError(t, r.Err)
			require.Equal(t, being.ReportCompleted, r.Status)
			h.shutdown()
			assert.Contains(t, warnings(h.journal()), tt.warning)
			offered := map[string]bool{}
			for _, tl := range srv.Completions()[0].Completion.Tools {
				offered[tl.Function.Name] = true
			}
			assert.True(t, offered["singularity_memory_remember"])
			assert.Equal(t, tt.servers, offered["good__echo__echo"], "the healthy server's tools stay")
			for name := range offered {
				assert.False(t, strings.HasPrefix(name, "broken__"), name)
			}
		})
	}
}

// TestSpreadBeingWithoutItsLasIsTriedAgain: a being of a spread family
// whose Las is restarted past the intensity at boot (a takeover starting
// many at once) does not live on built-in tools: it fails its start,
// writing nothing, and its member tries it again after a wait.
func TestSpreadBeingWithoutItsLasIsTriedAgain(t *testing.T) {
	t.Parallel()
	opts := options(t, being.Run)
	opts.MCPTimeout = 300 * time.Millisecond
	withExampleLas(t, &opts, `{"exit_on_start":true}`)
	opts.Placement = spreadPlacement{}
	h := start(t, newBrama(t), opts)
	stopped := h.stopped()
	require.Error(t, stopped.Err)
	assert.Contains(t, stopped.Err.Error(), "the being's member tries it again after a wait")
	assert.Equal(t, state.StatusFailed, stopped.Status)
	for _, e := range h.journal() {
		assert.NotEqual(t, state.EventStarted, e.Type, "nothing of the start is written")
	}
}

// spreadPlacement is a being of a spread family on its own files: its
// children left to the members, without etcd.
type spreadPlacement struct{ being.Alone }

func (spreadPlacement) ChildrenElsewhere() bool { return true }

// TestWithheldFinanceResultStillEarns: a finance__ tool whose successful
// result the output boundary withholds (it echoes a raw path) reads
// success to the model, and its revenue is credited from the result as
// returned (docs/money.md#credit).
func TestWithheldFinanceResultStillEarns(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("sale", "finance__finance_sell_report", `{"item":"/etc/widget","units":2}`)),
		bramatest.TextReply("done", bramatest.Usage(10, 5)),
	)
	opts := options(t, being.Once)
	withExampleLas(t, &opts, `{}`)
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	h.shutdown()

	msgs := toolMessages(srv.Completions()[1].Completion.Messages)
	assert.Equal(t, `{"status":"success","error_code":"sensitive_output_rejected"}`, msgs["sale"])
	assert.Equal(t, "0.1", r.Earned.String())
	var credited []string
	for _, e := range h.journal() {
		if e.Type == state.EventRevenueCredited {
			credited = append(credited, e.Amount.String()+" from "+e.Source)
		}
	}
	assert.Equal(t, []string{"0.1 from finance__finance_sell_report"}, credited)
}

// TestSecretsRedactedInToolResults: a server that echoes a secret the
// runtime holds (here a servers-file secret it was given in its env)
// reaches the model, the journal and the state as [redacted].
func TestSecretsRedactedInToolResults(t *testing.T) {
	t.Parallel()
	const secret = "srv-secret-9f8e7d"
	srv := newBrama(t)
	srv.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("env", "box__chaos__env", `{}`)),
		bramatest.TextReply("done", bramatest.Usage(10, 5)),
	)
	opts := options(t, being.Once)
	box := exampleServer(t, "box", `{"surfaces":["chaos"]}`)
	box.Env = []string{"BOX_API_KEY=" + secret}
	opts.Secrets = boundary.NewSecrets([]byte(secret))
	opts.Las = &las.Options{Servers: []las.Server{box}, Secrets: opts.Secrets, CallTimeout: opts.MCPTimeout, PingInterval: -1, Logger: quiet}
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	h.shutdown()
	msgs := toolMessages(srv.Completions()[1].Completion.Messages)
	assert.Contains(t, msgs["env"], "BOX_API_KEY=[redacted]")
	for _, req := range srv.Requests() {
		assert.NotContains(t, string(req.Body), secret)
	}
	for _, name := range []string{"state.json", "activity.jsonl", "conversation.jsonl"} {
		assert.NotContains(t, h.fileText(name), secret, name)
	}
}
