package browser

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

// chromiumPath is the Debian chromium package's launcher.
const chromiumPath = "/usr/bin/chromium"

// browserDeadline bounds one Chromium run.
const browserDeadline = 90 * time.Second

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// hostile is a being name that would run script if the page ever put
// text into the DOM as markup.
const hostile = `<img src=x onerror="document.title='pwned'">`

// server serves the debug handler over the reference family tree plus a
// silent actor and a being with a hostile name, and counts the loads of
// the page.
func server(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	spec := debugtest.Family()
	spec.Children = append(spec.Children,
		debugtest.Spec{ID: "stuck", Silent: true},
		debugtest.Spec{ID: "being-mallory", Description: messages.Description{Kind: "being", Name: hostile, Status: "running"}},
	)
	var fetches atomic.Int32
	return treeServerCounting(t, spec, &fetches, ""), &fetches
}

// treeServer serves the debug handler over the tree spec describes.
func treeServer(t *testing.T, spec debugtest.Spec) *httptest.Server {
	return treeServerCounting(t, spec, new(atomic.Int32), "")
}

// treeServerCounting serves the debug handler over the tree spec
// describes, with the family's state directories in stateDir (none when
// empty), and counts the loads of the page in fetches: the browser's,
// then one per refresh of its script.
func treeServerCounting(t *testing.T, spec debugtest.Spec, fetches *atomic.Int32, stateDir string) *httptest.Server {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)
	pid, err := debugtest.Spawn(system, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })

	h := debug.Handler(debug.HandlerConfig{Root: system.Root, PID: pid, Deadline: 500 * time.Millisecond, StateDir: stateDir})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/" {
			fetches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chromium runs headless Chromium with a fresh profile and the given
// extra arguments, and returns its standard output. The whole process
// group is killed if it outlives browserDeadline.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("headless browser test skipped: %s is not installed (apt-get install chromium)", chromiumPath)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), browserDeadline)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-quic", "--disable-dev-shm-usage",
		"--user-data-dir=" + filepath.Join(home, "profile"),
	}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	// Chromium forks helpers (zygote, renderer): give it its own process
	// group so a timeout kills all of them, and stop waiting on its pipes
	// shortly after.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "chromium failed (deadline %s); stderr:\n%s", browserDeadline, stderr.String())
	return stdout.String()
}

func TestDebugPageRendersTree(t *testing.T) {
	srv, fetches := server(t)
	dom := chromium(t, "--virtual-time-budget=5000", "--dump-dom", srv.URL+"/debug/")

	// Every node's kind, name, status and key figures are on the page.
	for _, want := range []string{
		`<span class="kind">family</span>`,
		`<span class="kind">brama</span>`,
		`<span class="kind">being</span>`,
		`<span class="kind">ledger</span>`,
		`<span class="kind">las</span>`,
		`>Ada</`,
		`>Bo</`,
		`data-status="running"`,
		`data-status="unresponsive"`,
		`family/stuck`,
		`family/being-ada/being-bo/las`,
		`<b>balance</b>9.75</span>`,
		`<b>did</b>finance__finance_propose`,
		`errors.transient=2`,
		`<b>spent</b>0.50</span>`,
		`process_id=4343`,
		`last_restart_reason="exit status 1"`,
		"updated ",
	} {
		assert.Contains(t, dom, want)
	}
	assert.Equal(t, 3, strings.Count(dom, `<span class="kind">being</span>`), "Ada, Bo and the hostile one")
	assert.Equal(t, 2, strings.Count(dom, `<span class="kind">ledger</span>`))
	assert.Equal(t, 2, strings.Count(dom, `<span class="kind">las</span>`))

	// The hostile name is shown as text, never parsed as markup.
	assert.Contains(t, dom, `&lt;img src=x onerror=`)
	assert.NotContains(t, dom, "<img")
	assert.Contains(t, dom, "<title>singularity: actors</title>", "the hostile handler never ran")

	// The page refreshes itself: within five seconds of virtual time its
	// script fetched it again.
	assert.GreaterOrEqual(t, fetches.Load(), int32(2))
}

func TestDebugPageScreenshot(t *testing.T) {
	srv, _ := server(t)
	shot := filepath.Join(t.TempDir(), "tree.png")
	chromium(t, "--virtual-time-budget=5000", "--window-size=1024,768", "--screenshot="+shot, srv.URL+"/debug/")

	raw, err := os.ReadFile(shot)
	require.NoError(t, err, "the screenshot exists")
	assert.Greater(t, len(raw), 10_000, "a rendered tree, not a blank page")
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, 1024, img.Bounds().Dx())
	assert.Equal(t, 768, img.Bounds().Dy())

	// Not a single flat colour: count distinct colours.
	colours := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	assert.Greater(t, len(colours), 10)
	t.Logf("screenshot %s: %d bytes, %d colours sampled", shot, len(raw), len(colours))
	if dir := os.Getenv("DEBUG_SCREENSHOT_DIR"); dir != "" {
		// For a human look: keep a copy outside the test's temp dir.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tree.png"), raw, 0o644))
	}
}
