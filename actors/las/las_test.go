package las

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/examplelas"
)

func names(r messages.LasCatalogResponse) []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

func TestHandshakeListAndCallOutcomes(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	cat := h.catalog()
	require.True(t, cat.Available)
	got := names(cat)
	// Pages of four: the whole list only arrives by following nextCursor.
	assert.Greater(t, len(got), 8)
	for _, want := range []string{"finance__finance_sell_report", "echo__echo", "skarbiec__status", "chaos__env"} {
		assert.Contains(t, got, want)
	}
	assert.True(t, sort.StringsAreSorted(got), "Las order (the SDK lists by name) is kept: %v", got)
	changed := next[messages.LasCatalogChanged](h, 5*time.Second)
	assert.Len(t, changed.Tools, len(got))

	sale := h.call("finance__finance_sell_report", `{"item":"tea","units":3}`, 5*time.Second)
	require.Equal(t, outcome.Success, sale.Status)
	assert.Equal(t, "0.15", content(t, sale)["structuredContent"].(map[string]any)["revenue_usd"])

	status := h.call("skarbiec__status", `{}`, 5*time.Second)
	assert.Equal(t, "agent-ada", content(t, status)["structuredContent"].(map[string]any)["agent_id"])

	failed := h.call("chaos__fail", ``, 5*time.Second)
	assert.Equal(t, outcome.Failed, failed.Status)
	assert.Equal(t, "remote_tool", failed.ErrorCode)
	assert.Equal(t, true, content(t, failed)["isError"])

	unknown := h.call("finance__nothing", `{}`, 5*time.Second)
	assert.Equal(t, outcome.Failed, unknown.Status)
	assert.Equal(t, "unknown_tool", unknown.ErrorCode)
	assert.JSONEq(t, `{"message":"tool is not in the current catalog"}`, string(unknown.Content))

	bad := h.call("echo__echo", `["not","an","object"]`, 5*time.Second)
	assert.Equal(t, "invalid_arguments", bad.ErrorCode)

	// A JSON-RPC error object (the SDK's answer to arguments its schema
	// rejects is an isError result, so ask for an unknown method shape via
	// a bad cursor instead) is covered in mcpwire; here: secret-shaped
	// output passes through untouched, for the output boundary to judge.
	secret := h.call("chaos__secret", `{}`, 5*time.Second)
	assert.Equal(t, outcome.Success, secret.Status)

	d := h.describe()
	assert.Equal(t, "las", d.Kind)
	assert.Equal(t, "running", d.Status)
	assert.Equal(t, len(got), d.Figures["tool_count"])
	assert.Equal(t, 0, d.Figures["restarts"])
	assert.NotZero(t, d.Figures["process_id"])
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("SINGULARITY_TEST_LEAK", "must-not-reach-las")
	parent := map[string]string{
		"SKARBIEC_CAP_POLICY": "/etc/skarbiec/policy.json",
		"SKARBIEC_CAP_SOCKET": "/run/skarbiec.sock",
		"HOME":                "/root",
		"BRAMA_HMAC_SECRET":   "hunter2",
	}
	skip := "weles"
	h := start(t, examplelas.Config{}, func(o *Options) {
		o.Skip = &skip
		o.ReleaseManifest = "/pins/manifest.json"
		o.ReleaseManifestSignature = "/pins/manifest.sig"
		o.ReleaseTrustStore = "/pins/trust.pem"
		o.ReleaseWatermark = "/pins/watermark"
		o.LookupEnv = func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	})
	res := h.call("chaos__env", `{}`, 5*time.Second)
	require.Equal(t, outcome.Success, res.Status)
	var env []string
	for _, v := range content(t, res)["structuredContent"].(map[string]any)["env"].([]any) {
		env = append(env, v.(string))
	}
	want := []string{
		"LANG=C.UTF-8",
		"LAS_ONLY=" + DefaultOnly,
		"LAS_RELEASE_MANIFEST_FILE=/pins/manifest.json",
		"LAS_RELEASE_MANIFEST_SIGNATURE_FILE=/pins/manifest.sig",
		"LAS_RELEASE_TRUST_STORE_FILE=/pins/trust.pem",
		"LAS_RELEASE_WATERMARK_FILE=/pins/watermark",
		"LAS_SKIP=weles",
		"LC_ALL=C.UTF-8",
		"PATH=" + basePath,
		"SKARBIEC_CAP_POLICY=/etc/skarbiec/policy.json",
		"SKARBIEC_CAP_SOCKET=/run/skarbiec.sock",
		"SKARBIEC_MCP_AGENT_ID=agent-ada",
	}
	assert.Equal(t, want, env)
}

func TestEnvironmentRules(t *testing.T) {
	str := func(s string) *string { return &s }
	lookup := func(k string) (string, bool) {
		if k == "SKARBIEC_WORM_RECEIPT_DIR" {
			return "", true // set but empty still passes through
		}
		return "", false
	}
	tests := []struct {
		name    string
		opts    Options
		want    []string // extra variables after the release pins
		wantErr string
	}{
		{"skarbiec selected by default list", Options{AgentID: "a1"}, []string{"SKARBIEC_WORM_RECEIPT_DIR=", "SKARBIEC_MCP_AGENT_ID=a1"}, ""},
		{"empty only selects every surface", Options{Only: str(""), AgentID: "a1"}, []string{"SKARBIEC_WORM_RECEIPT_DIR=", "SKARBIEC_MCP_AGENT_ID=a1"}, ""},
		{"only without skarbiec", Options{Only: str("echo,finance")}, nil, ""},
		{"skipped skarbiec", Options{Skip: str(" skarbiec ")}, nil, ""},
		{"no agent id", Options{}, nil, "mcp: Skarbiec requires an explicit immutable Las agent identity"},
		{"bad agent id", Options{AgentID: "a b"}, nil, "mcp: invalid immutable Las agent identity"},
		{"bad agent id without skarbiec", Options{Only: str("echo"), AgentID: strings.Repeat("x", 129)}, nil, "mcp: invalid immutable Las agent identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.LookupEnv = lookup
			env, err := environment(tt.opts)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				assert.Equal(t, fault.Permanent, fault.KindOf(err))
				assert.Equal(t, 3, fault.ExitCode(err))
				return
			}
			require.NoError(t, err)
			var extra []string
			for _, kv := range env {
				if strings.HasPrefix(kv, "SKARBIEC_") {
					extra = append(extra, kv)
				}
			}
			assert.Equal(t, tt.want, extra)
			assert.Equal(t, "PATH="+basePath, env[0])
			hasSkip := false
			for _, kv := range env {
				hasSkip = hasSkip || strings.HasPrefix(kv, "LAS_SKIP=")
			}
			assert.Equal(t, tt.opts.Skip != nil, hasSkip, "LAS_SKIP only when set")
		})
	}
}

func TestSurfaceSelected(t *testing.T) {
	cases := []struct {
		only, skip string
		want       bool
	}{
		{"weles,skarbiec", "", true},
		{"weles", "", false},
		{"", "", true},
		{"", "skarbiec", false},
		{"skarbiec", "skarbiec", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, surfaceSelected(c.only, c.skip, "skarbiec"), "%q %q", c.only, c.skip)
	}
}

func TestFramingRobustness(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	// Junk, blank lines, a notification, a stray response and two requests
	// to us (one reusing an id of ours) arrive before the answer.
	res := h.call("chaos__noise", `{}`, 5*time.Second)
	require.Equal(t, outcome.Success, res.Status)
	// The session is intact, and by the time this answer is back the
	// server has read our answers to its requests.
	require.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"still here"}`, 5*time.Second).Status)
	assert.Equal(t, 1, h.count(`answered "chaos-1" -32601`))
	assert.Equal(t, 1, h.count(`answered 1 -32601`))
	assert.Equal(t, 0, h.describe().Figures["restarts"])
}

func TestListChangedRelists(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	before := next[messages.LasCatalogChanged](h, 10*time.Second)
	require.Equal(t, outcome.Success, h.call("chaos__list_changed", `{}`, 5*time.Second).Status)
	after := next[messages.LasCatalogChanged](h, 5*time.Second)
	assert.Len(t, after.Tools, len(before.Tools)+1)
	res := h.call("echo__echo_again", `{"message":"new"}`, 5*time.Second)
	assert.Equal(t, outcome.Success, res.Status)
}

func TestDeadlineSendsCancelledAndReportsIndeterminate(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	res := h.call("chaos__slow", `{"key":"k1","ms":20000}`, 300*time.Millisecond)
	assert.Equal(t, outcome.Indeterminate, res.Status)
	assert.Equal(t, "mcp", res.ErrorCode)
	assert.JSONEq(t, `{"message":"Las did not answer within the deadline"}`, string(res.Content))
	// The server reads its stdin in order: once this later call is
	// answered, the cancellation has been received.
	require.Equal(t, outcome.Success, h.call("chaos__count", `{"key":"after"}`, 5*time.Second).Status)
	var cancelled []string
	for _, l := range h.lines() {
		if strings.HasPrefix(l, "cancelled ") {
			cancelled = append(cancelled, l)
		}
	}
	assert.Len(t, cancelled, 1)
	assert.Equal(t, 1, h.count("call chaos__slow k1"))
	// A slow tool is not a dead server: the liveness ping passes.
	res2, err := h.system.Root.RequestFuture(h.las, messages.LasPingRequest{}, 5*time.Second).Result()
	require.NoError(t, err)
	assert.True(t, res2.(messages.LasPingResponse).OK)
	assert.Equal(t, 0, h.describe().Figures["restarts"])
}

func TestHangIsRestarted(t *testing.T) {
	h := start(t, examplelas.Config{}, func(o *Options) { o.PingTimeout = 300 * time.Millisecond })
	next[messages.LasCatalogChanged](h, 10*time.Second)
	res := h.call("chaos__freeze", `{"key":"f1"}`, 300*time.Millisecond)
	assert.Equal(t, outcome.Indeterminate, res.Status)
	restarted := next[messages.LasRestarted](h, 10*time.Second)
	assert.Equal(t, 1, restarted.Restarts)
	assert.Contains(t, restarted.Reason, "mcp: Las stopped answering: liveness ping deadline exceeded")
	next[messages.LasCatalogChanged](h, 10*time.Second)
	assert.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"back"}`, 5*time.Second).Status)
	assert.Equal(t, 1, h.count("call chaos__freeze f1"), "the frozen call was delivered once and never replayed")
	d := h.describe()
	assert.Equal(t, 1, d.Figures["restarts"])
	assert.Equal(t, restarted.Reason, d.Figures["last_restart_reason"])
}

func TestKillBetweenCallsRestartsWithFreshCatalog(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	next[messages.LasCatalogChanged](h, 10*time.Second)
	require.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"one"}`, 5*time.Second).Status)
	oldPID := h.describe().Figures["process_id"].(int)
	require.NoError(t, syscall.Kill(oldPID, syscall.SIGKILL))

	restarted := next[messages.LasRestarted](h, 10*time.Second)
	assert.Equal(t, "mcp: Las process exited (signal: killed)", restarted.Reason)
	fresh := next[messages.LasCatalogChanged](h, 10*time.Second)
	assert.NotEmpty(t, fresh.Tools)
	require.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"two"}`, 5*time.Second).Status)
	d := h.describe()
	assert.NotEqual(t, oldPID, d.Figures["process_id"])
	assert.Equal(t, 1, d.Figures["restarts"])
	assert.True(t, processGone(oldPID))
}

func TestKillDuringCallIsIndeterminateAndDeliveredOnce(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	res := h.call("chaos__exit", `{"key":"x1"}`, 5*time.Second)
	assert.Equal(t, outcome.Indeterminate, res.Status)
	assert.Equal(t, "mcp", res.ErrorCode)
	assert.Contains(t, string(res.Content), "Las failed during the call")
	next[messages.LasRestarted](h, 10*time.Second)
	require.Equal(t, outcome.Success, h.call("chaos__count", `{"key":"y1"}`, 5*time.Second).Status)
	assert.Equal(t, 1, h.count("call chaos__exit x1"), "delivered exactly once, not replayed after the restart")
	assert.Equal(t, 1, h.count("call chaos__count y1"))
}

func TestCallsDuringRestart(t *testing.T) {
	cfg := examplelas.Config{}
	opts := baseOptions(t, &cfg)
	h := startWith(t, opts, supervision.LasConfig{Backoff: supervision.Backoff{Initial: 400 * time.Millisecond, Jitter: -1}}, cfg.DeliveriesFile)
	next[messages.LasCatalogChanged](h, 10*time.Second)
	require.NoError(t, syscall.Kill(h.describe().Figures["process_id"].(int), syscall.SIGKILL))
	// Wait until the supervisor has scheduled the restart: the actor's
	// mailbox is suspended for the 400 ms backoff from here on.
	for ev := range h.decisions {
		if ev.Kind == supervision.RestartScheduled {
			break
		}
	}
	type answer struct {
		o   outcome.Outcome
		err error
	}
	ask := func(key string, deadline time.Duration) chan answer {
		ch := make(chan answer, 1)
		f := h.system.Root.RequestFuture(h.las, messages.LasCallRequest{
			Tool: "chaos__count", Arguments: json.RawMessage(`{"key":"` + key + `"}`), Deadline: time.Now().Add(deadline),
		}, deadline+10*time.Second)
		go func() {
			r, err := f.Result()
			var o outcome.Outcome
			if err == nil {
				o = r.(messages.LasCallResponse).Outcome
			}
			ch <- answer{o, err}
		}()
		return ch
	}
	patient := ask("patient", 10*time.Second)
	hasty := ask("hasty", 50*time.Millisecond)

	p := <-patient
	require.NoError(t, p.err)
	assert.Equal(t, outcome.Success, p.o.Status, "a call that can wait for the restart is served by the new Las")
	hs := <-hasty
	require.NoError(t, hs.err)
	assert.Equal(t, outcome.Indeterminate, hs.o.Status)
	assert.Contains(t, []string{msgRestarting, msgDeadlinePassed}, content(t, hs.o)["message"])
	assert.Equal(t, 1, h.count("call chaos__count patient"))
	assert.Equal(t, 0, h.count("call chaos__count hasty"), "a call its caller gave up on is never delivered")
}

func TestCallPastDeadlineIsNotSent(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	h.catalog()
	res, err := h.system.Root.RequestFuture(h.las, messages.LasCallRequest{
		Tool: "chaos__count", Arguments: json.RawMessage(`{"key":"late"}`), Deadline: time.Now().Add(-time.Millisecond),
	}, 5*time.Second).Result()
	require.NoError(t, err)
	o := res.(messages.LasCallResponse).Outcome
	assert.Equal(t, outcome.Indeterminate, o.Status)
	assert.Equal(t, msgDeadlinePassed, content(t, o)["message"])
	require.Equal(t, outcome.Success, h.call("chaos__count", `{"key":"on-time"}`, 5*time.Second).Status)
	assert.Equal(t, 0, h.count("call chaos__count late"))
}

func TestCrashLoopExceedsIntensity(t *testing.T) {
	cfg := examplelas.Config{ExitOnStart: true}
	opts := baseOptions(t, &cfg)
	logs := newCaptured()
	opts.Logger = slog.New(logs)
	h := startWith(t, opts, supervision.LasConfig{Intensity: supervision.Intensity{MaxRestarts: 3, Within: time.Minute}}, cfg.DeliveriesFile)

	cat := h.catalog() // waits through the restarts, then learns Las is gone
	assert.False(t, cat.Available)
	require.Error(t, cat.Err)
	assert.Contains(t, cat.Err.Error(), "mcp: Las unavailable: restart intensity exceeded")

	gone := h.gone()
	assert.Equal(t, "Las unavailable: restart intensity exceeded", gone.String())
	h.assertUnavailable()
	restarts := 0
	for ev := range h.decisions {
		if ev.Kind == supervision.RestartScheduled {
			restarts++
		}
		if ev.Kind == supervision.IntensityExceeded {
			break
		}
	}
	assert.Equal(t, 3, restarts)
	assert.Equal(t, 3, h.restarts, "each restart was announced to the parent")
	stderr := 0
	for _, m := range logs.all() {
		if m == "Ada: las: examplelas: exiting at start as configured" {
			stderr++
		}
	}
	assert.Equal(t, 4, stderr, "Las's stderr reaches the log, line by line, prefixed with the being's name")
}

func TestPermanentFailuresAreNotRetried(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name  string
		cfg   examplelas.Config
		tweak func(*Options)
		want  string
	}{
		{"version mismatch", examplelas.Config{ProtocolVersion: "2025-06-18"}, nil, "mcp: Las negotiated an unsupported MCP version"},
		{"spawn error", examplelas.Config{}, func(o *Options) { o.Command = "/nonexistent/las" }, "mcp: cannot start Las: fork/exec /nonexistent/las: no such file or directory"},
		{"required surface", examplelas.Config{}, func(o *Options) { o.RequiredSurfaces = []string{"skarbiec", "weles"} }, "mcp: required Las surface unavailable: weles"},
		{"surface not offered", examplelas.Config{Surfaces: []string{"echo", "skarbiec"}}, nil, "mcp: required Las surface unavailable: finance"},
		{"skarbiec without agent", examplelas.Config{}, func(o *Options) { o.AgentID = "" }, "mcp: Skarbiec requires an explicit immutable Las agent identity"},
		{"invalid agent", examplelas.Config{}, func(o *Options) { o.AgentID = "ada/1"; o.Only = str("") }, "mcp: invalid immutable Las agent identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, tt.cfg, tt.tweak)
			gone := h.gone()
			assert.Equal(t, tt.want, gone.Reason)
			require.EqualError(t, gone.Err, tt.want)
			assert.Equal(t, 3, fault.ExitCode(gone.Err))
			h.assertUnavailable()
			assert.Zero(t, h.restarts)
			ev := <-h.decisions
			assert.Equal(t, supervision.Stopped, ev.Kind)
			for _, e := range h.drain() {
				_, restarted := e.(messages.LasRestarted)
				assert.False(t, restarted, "a permanent failure is not restarted")
			}
			assert.Empty(t, h.decisions)
		})
	}
}

func TestOversizedLineBreaksTheSession(t *testing.T) {
	h := start(t, examplelas.Config{}, func(o *Options) { o.MaxLineBytes = 4 << 20 })
	next[messages.LasCatalogChanged](h, 10*time.Second)
	// Lines of megabytes are fine up to the limit...
	ok := h.call("chaos__big", `{"bytes":3000000}`, 10*time.Second)
	require.Equal(t, outcome.Success, ok.Status)
	assert.Greater(t, len(ok.Content), 3000000)
	// ...and one past it ends the session: indeterminate, then a restart.
	res := h.call("chaos__big", `{"bytes":5000000}`, 10*time.Second)
	assert.Equal(t, outcome.Indeterminate, res.Status)
	restarted := next[messages.LasRestarted](h, 10*time.Second)
	assert.Contains(t, restarted.Reason, "mcp: Las sent an oversized line")
	next[messages.LasCatalogChanged](h, 10*time.Second)
	assert.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"x"}`, 5*time.Second).Status)
}

func TestDefaultLimitAcceptsThirteenMegabyteLine(t *testing.T) {
	if testing.Short() {
		t.Skip("large line")
	}
	h := start(t, examplelas.Config{}, nil)
	res := h.call("chaos__big", `{"bytes":13000000}`, 20*time.Second)
	require.Equal(t, outcome.Success, res.Status)
	assert.Greater(t, len(res.Content), 13000000)
}

func TestShutdownLadderKillsAStubbornLas(t *testing.T) {
	h := start(t, examplelas.Config{IgnoreStdinClose: true, IgnoreSIGTERM: true, Grandchild: true}, func(o *Options) {
		o.ShutdownGrace = 200 * time.Millisecond
		o.TermGrace = 200 * time.Millisecond
	})
	h.catalog()
	pid := h.describe().Figures["process_id"].(int)
	var grandchild int
	for _, l := range h.lines() {
		if v, ok := strings.CutPrefix(l, "grandchild "); ok {
			grandchild, _ = strconv.Atoi(v)
		}
	}
	require.NotZero(t, grandchild)
	begun := time.Now()
	h.stop()
	assert.GreaterOrEqual(t, time.Since(begun), 400*time.Millisecond, "grace, then SIGTERM grace, then SIGKILL")
	assert.True(t, processGone(pid), "Las is gone")
	// SIGKILL to the group is delivered asynchronously and the orphaned
	// grandchild is reaped by init, not by us: poll its state (an external
	// process gives no event to wait on), within a deadline.
	assert.Eventually(t, func() bool { return processGone(grandchild) }, 5*time.Second, 5*time.Millisecond, "its process group is gone")
}

func TestShutdownOfAWellBehavedLasIsQuick(t *testing.T) {
	h := start(t, examplelas.Config{Grandchild: true}, func(o *Options) { o.ShutdownGrace = 10 * time.Second })
	h.catalog()
	pid := h.describe().Figures["process_id"].(int)
	begun := time.Now()
	h.stop()
	assert.Less(t, time.Since(begun), 5*time.Second, "closing stdin is enough; no grace is spent")
	assert.True(t, processGone(pid))
}

// processGone reports whether pid no longer runs: absent, or a zombie
// waiting for a reaper that is not ours.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// BenchmarkCallRoundTrip is one tools/call (echo__echo) through the Las
// actor to the example Las, a real child process, and back. With
// EXAMPLELAS_CPUPROFILE=<file> the example Las is built with
// -tags examplelas_pprof and writes its CPU profile there when the
// benchmark ends (go test's -cpuprofile profiles the client half).
func BenchmarkCallRoundTrip(b *testing.B) {
	cfg, tweak := profiledExampleLas(b)
	h := start(b, cfg, tweak)
	h.catalog()
	req := messages.LasCallRequest{Tool: "echo__echo", Arguments: json.RawMessage(`{"message":"ping"}`)}
	b.ReportAllocs()
	for b.Loop() {
		req.Deadline = time.Now().Add(5 * time.Second)
		res, err := h.system.Root.RequestFuture(h.las, req, 10*time.Second).Result()
		if err != nil || res.(messages.LasCallResponse).Outcome.Status != outcome.Success {
			b.Fatalf("call: %v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// profiledExampleLas is the example Las of BenchmarkCallRoundTrip: the
// plain binary, or with EXAMPLELAS_CPUPROFILE set one built to profile
// itself into that file.
func profiledExampleLas(b *testing.B) (examplelas.Config, func(*Options)) {
	path := os.Getenv("EXAMPLELAS_CPUPROFILE")
	if path == "" {
		return examplelas.Config{}, nil
	}
	bin := filepath.Join(b.TempDir(), "examplelas")
	build := exec.Command("go", "build", "-tags", "examplelas_pprof", "-o", bin, "./cmd/examplelas")
	build.Dir = testkit.ModuleRoot(b)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the profiling example Las: %v\n%s", err, out)
	}
	return examplelas.Config{CPUProfile: path}, func(o *Options) { o.Command = bin }
}

// BenchmarkPingRoundTrip is the client's overhead floor: the cheapest
// request the SDK server answers, through the actor.
func BenchmarkPingRoundTrip(b *testing.B) {
	h := start(b, examplelas.Config{}, nil)
	h.catalog()
	b.ReportAllocs()
	for b.Loop() {
		res, err := h.system.Root.RequestFuture(h.las, messages.LasPingRequest{}, 10*time.Second).Result()
		if err != nil || !res.(messages.LasPingResponse).OK {
			b.Fatalf("ping: %v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pings/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/ping")
}

func TestPeriodicPingDetectsAHang(t *testing.T) {
	h := start(t, examplelas.Config{}, func(o *Options) {
		o.PingInterval = 100 * time.Millisecond
		o.PingTimeout = 200 * time.Millisecond
	})
	next[messages.LasCatalogChanged](h, 10*time.Second)
	// The call's own deadline is far away: only the liveness ping can
	// notice that the server went silent.
	res := h.call("chaos__freeze", `{"key":"p1"}`, 30*time.Second)
	assert.Equal(t, outcome.Indeterminate, res.Status)
	assert.Contains(t, content(t, res)["message"], "Las failed during the call: mcp: Las stopped answering")
	next[messages.LasRestarted](h, 10*time.Second)
	next[messages.LasCatalogChanged](h, 10*time.Second)
	assert.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"alive"}`, 5*time.Second).Status)
}

func TestSurfaceMissingAfterRestartIsRetried(t *testing.T) {
	cfg := examplelas.Config{}
	opts := baseOptions(t, &cfg)
	h := startWith(t, opts, supervision.LasConfig{Backoff: supervision.Backoff{Initial: 100 * time.Millisecond, Jitter: -1}}, cfg.DeliveriesFile)
	next[messages.LasCatalogChanged](h, 10*time.Second)

	good, err := os.ReadFile(opts.Entrypoint)
	require.NoError(t, err)
	bad, err := json.Marshal(examplelas.Config{DeliveriesFile: cfg.DeliveriesFile, Surfaces: []string{"echo", "skarbiec"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(opts.Entrypoint, bad, 0o600))
	require.NoError(t, syscall.Kill(h.describe().Figures["process_id"].(int), syscall.SIGKILL))

	missing := next[messages.LasSurfaceMissing](h, 10*time.Second)
	assert.Equal(t, "finance", missing.Surface)
	assert.Equal(t, "required Las surface unavailable: finance", missing.String())
	require.NoError(t, os.WriteFile(opts.Entrypoint, good, 0o600))

	// Kept trying under the backoff, and came back with finance.
	changed := next[messages.LasCatalogChanged](h, 10*time.Second)
	var names []string
	for _, tl := range changed.Tools {
		names = append(names, tl.Function.Name)
	}
	assert.Contains(t, names, "finance__finance_sell_report")
	assert.Equal(t, outcome.Success, h.call("finance__finance_quote", `{"item":"tea"}`, 5*time.Second).Status)
	assert.GreaterOrEqual(t, h.describe().Figures["restarts"], 2)
}

// TestOverlappingListChangedKeepsTheWholeCatalogue: three list_changed in
// a row against a list of several pages (4 tools a page) are serialized
// (docs/las.md#re-lists): the one that starts a listing, then exactly one
// more for the two that came during it, each with the whole catalogue.
func TestOverlappingListChangedKeepsTheWholeCatalogue(t *testing.T) {
	h := start(t, examplelas.Config{PageSize: 4}, nil)
	boot := next[messages.LasCatalogChanged](h, 10*time.Second)
	require.Greater(t, len(boot.Tools), 8, "the list spans several pages")
	require.Equal(t, outcome.Success, h.call("chaos__list_burst", `{}`, 5*time.Second).Status)
	for range 2 {
		relisted := next[messages.LasCatalogChanged](h, 5*time.Second)
		assert.Equal(t, boot.Tools, relisted.Tools)
	}
	// Nothing else was listed: a ping goes behind any further page.
	_, err := h.system.Root.RequestFuture(h.las, messages.LasPingRequest{}, 5*time.Second).Result()
	require.NoError(t, err)
	for _, ev := range h.drain() {
		_, relisted := ev.(messages.LasCatalogChanged)
		assert.False(t, relisted, "a third listing")
	}
	assert.Equal(t, len(boot.Tools), h.describe().Figures["tool_count"])
}

// TestHangOnInitializeHasOurSentence: a server that never answers
// initialize fails with our own sentence, not the library's timeout text,
// and is restarted like any transient failure (docs/las.md#las-at-boot).
func TestHangOnInitializeHasOurSentence(t *testing.T) {
	cfg := examplelas.Config{HangOnInitialize: true}
	opts := baseOptions(t, &cfg)
	opts.CallTimeout = 300 * time.Millisecond
	h := startWith(t, opts, supervision.LasConfig{Intensity: supervision.Intensity{MaxRestarts: 1, Within: time.Minute}}, cfg.DeliveriesFile)
	restarted := next[messages.LasRestarted](h, 10*time.Second)
	assert.Equal(t, "mcp: Las did not answer initialize within 0.3 s", restarted.Reason)
	gone := h.gone()
	assert.Equal(t, "Las unavailable: restart intensity exceeded", gone.String())
	assert.Contains(t, gone.Err.Error(), "(last failure: Las did not answer initialize within 0.3 s)")
	assert.NotContains(t, gone.Err.Error(), "future")
}

// TestListToolsHangOnInitialize: the tools command's wait for a server
// that never answers initialize ends with our sentence.
func TestListToolsHangOnInitialize(t *testing.T) {
	cfg := examplelas.Config{HangOnInitialize: true}
	opts := baseOptions(t, &cfg)
	opts.CallTimeout = 200 * time.Millisecond
	_, err := ListTools(context.Background(), opts)
	require.Error(t, err)
	assert.Equal(t, "mcp: Las did not answer initialize within 0.2 s", err.Error())
	assert.Equal(t, 3, fault.ExitCode(err))
}

// TestLongStderrLineIsCut: a stderr line over 64 KiB is logged cut at
// 64 KiB with "…", and the lines after it are still logged; one over
// 1 MiB ends the logging of stderr with one warning (docs/las.md#spawn).
func TestLongStderrLineIsCut(t *testing.T) {
	tests := []struct {
		name      string
		bytes     int
		wantCut   bool // the long line is logged cut, and the line after it
		wantWarns int  // warnings that the rest of stderr is not logged
	}{
		{"over 64 KiB", 512 << 10, true, 0},
		{"over 1 MiB", 2 << 20, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := examplelas.Config{StderrLineBytes: tt.bytes}
			opts := baseOptions(t, &cfg)
			logs := newCaptured()
			opts.Logger = slog.New(logs)
			h := startWith(t, opts, supervision.LasConfig{}, cfg.DeliveriesFile)
			require.True(t, h.catalog().Available)
			// The stderr lines were written before the server answered
			// initialize; the stop reads stderr to its end before it returns.
			h.stop()
			var long []string
			after, warns := false, 0
			for _, m := range logs.all() {
				if strings.HasPrefix(m, "Ada: las: xxx") {
					long = append(long, m)
				}
				if m == "Ada: las: examplelas: after the long line" {
					after = true
				}
				if strings.Contains(m, "stderr line longer than 1 MiB") {
					warns++
				}
			}
			assert.Equal(t, tt.wantWarns, warns)
			assert.Equal(t, tt.wantCut, after, "the line after the long one is logged")
			if !tt.wantCut {
				assert.Empty(t, long)
				return
			}
			require.Len(t, long, 1)
			assert.Equal(t, len("Ada: las: ")+64<<10+len("…"), len(long[0]))
			assert.True(t, strings.HasSuffix(long[0], "x…"))
		})
	}
}

// TestRefusedRelistKeepsTheCatalogue: a re-list that breaks the
// catalogue's rules is not installed; the previous catalogue stays, the
// parent hears a warning, and Las is not restarted (docs/las.md#re-lists).
func TestRefusedRelistKeepsTheCatalogue(t *testing.T) {
	h := start(t, examplelas.Config{}, nil)
	boot := next[messages.LasCatalogChanged](h, 10*time.Second)
	require.Equal(t, outcome.Success, h.call("chaos__list_bad", `{}`, 5*time.Second).Status)
	warning := next[messages.LasWarning](h, 5*time.Second)
	assert.Equal(t, "Las tools re-list refused, keeping the previous catalogue: tool: invalid tool name: bad name!", warning.Text)
	assert.Equal(t, len(boot.Tools), h.describe().Figures["tool_count"])
	assert.Equal(t, outcome.Success, h.call("echo__echo", `{"message":"still here"}`, 5*time.Second).Status)
	for _, ev := range h.drain() {
		_, relisted := ev.(messages.LasCatalogChanged)
		assert.False(t, relisted, "the refused list was announced")
	}
	assert.Equal(t, 0, h.describe().Figures["restarts"])
}
