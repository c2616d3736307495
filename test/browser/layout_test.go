package browser

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

// familyNames are the beings of the demo world once it has grown.
var familyNames = []string{"Ada", "Bo", "Cy", "Di"}

// measureJS runs in the page (injected by the test's proxy, never by the
// endpoint): once every being's card has a drawn sparkline it records the
// layout facts the test asserts and writes them into <pre id="measure">.
const measureJS = `(function () {
  var want = %d, tries = 0;
  function rect(e) { var r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, width: r.width, height: r.height }; }
  // seen: e is drawn, inside the window and inside its clipping row.
  function seen(e, clip) {
    if (!e) { return false; }
    var r = e.getBoundingClientRect(), c = clip ? clip.getBoundingClientRect() : { left: 0, right: innerWidth };
    return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth + 0.5 && r.left >= c.left - 0.5 && r.right <= c.right + 0.5;
  }
  // whole: e's text is not cut.
  function whole(e) { return !!e && e.scrollWidth <= e.clientWidth; }
  function check() {
    var beings = document.querySelectorAll("#dash .card");
    var drawn = Array.prototype.filter.call(beings, function (r) { return r.querySelector("svg.spark polyline"); });
    var loaded = document.querySelectorAll("#rows .row").length > 0;
    if ((!loaded || drawn.length < want) && ++tries < 400) { setTimeout(check, 50); return; }
    var out = { innerWidth: innerWidth, scrollWidth: document.scrollingElement.scrollWidth, rows: [], beings: [],
                totals: document.getElementById("totals").textContent, pager: document.getElementById("pager").textContent,
                totalsSeen: Array.prototype.map.call(document.querySelectorAll("#totals .tot"), function (e) { return { text: e.textContent, seen: seen(e) }; }) };
    document.querySelectorAll("#rows .row").forEach(function (r) {
      var tops = [], bottoms = [];
      Array.prototype.forEach.call(r.children, function (c) {
        var b = rect(c);
        if (b.height > 0) { tops.push(b.top); bottoms.push(b.bottom); }
      });
      out.rows.push({ height: rect(r).height, scrollHeight: r.scrollHeight, clientHeight: r.clientHeight,
                      spread: Math.max.apply(null, bottoms) - Math.min.apply(null, tops), kind: r.getAttribute("data-kind") });
    });
    beings.forEach(function (r) {
      var name = r.querySelector(".name"), svg = r.querySelector("svg.spark"), line = svg && svg.querySelector("polyline");
      out.beings.push({ name: name.textContent, href: name.getAttribute("href") || "", nameWidth: rect(name).width,
                        spark: svg ? rect(svg) : null, points: line ? line.getAttribute("points").split(" ").length : 0,
                        statusSeen: seen(r.querySelector(".status"), r), balanceSeen: seen(r.querySelector(".bal"), r),
                        statusWhole: whole(r.querySelector(".status")), balanceWhole: whole(r.querySelector(".bal")) });
    });
    var pre = document.createElement("pre");
    pre.id = "measure";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  check();
})();`

// layout is what measureJS records.
type layout struct {
	InnerWidth  float64 `json:"innerWidth"`
	ScrollWidth float64 `json:"scrollWidth"`
	Totals      string  `json:"totals"`
	Pager       string  `json:"pager"`
	TotalsSeen  []struct {
		Text string `json:"text"`
		Seen bool   `json:"seen"`
	} `json:"totalsSeen"`
	Rows []struct {
		Height       float64 `json:"height"`
		ScrollHeight float64 `json:"scrollHeight"`
		ClientHeight float64 `json:"clientHeight"`
		Spread       float64 `json:"spread"`
		Kind         string  `json:"kind"`
	} `json:"rows"`
	Beings []struct {
		Name         string `json:"name"`
		Href         string `json:"href"`
		NameWidth    float64
		Spark        *struct{ Width, Height float64 } `json:"spark"`
		Points       int                              `json:"points"`
		StatusSeen   bool                             `json:"statusSeen"`
		BalanceSeen  bool                             `json:"balanceSeen"`
		StatusWhole  bool                             `json:"statusWhole"`
		BalanceWhole bool                             `json:"balanceWhole"`
	} `json:"beings"`
}

var measureRE = regexp.MustCompile(`(?s)<pre id="measure">(.*?)</pre>`)

// measuringProxy serves target's debug endpoint, with measureJS added to
// the page (and pinned in its Content-Security-Policy, which otherwise
// stays as the endpoint sent it).
func measuringProxy(t *testing.T, target string, beings int) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	script := fmt.Sprintf(measureJS, beings)
	sum := sha256.Sum256([]byte(script))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	rp := httputil.NewSingleHostReverseProxy(u)
	// The endpoint answers only requests that name its own address
	// (docs/debug.md): the proxy says whom it asks.
	direct := rp.Director
	rp.Director = func(req *http.Request) {
		direct(req)
		req.Host = u.Host
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != "/debug/" {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		body = bytes.Replace(body, []byte("</body>"), []byte("<script>"+script+"</script>\n</body>"), 1)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src ")
		resp.Header.Set("Content-Security-Policy", strings.Replace(csp, "script-src ", "script-src "+hash+" ", 1))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv
}

// measure loads the page at width×height and returns its layout.
func measure(t *testing.T, pageURL string, width, height int) layout {
	t.Helper()
	dom := chromium(t, "--virtual-time-budget=15000", fmt.Sprintf("--window-size=%d,%d", width, height), "--dump-dom", pageURL)
	m := measureRE.FindStringSubmatch(dom)
	require.NotNil(t, m, "the page never measured itself; DOM:\n%s", dom)
	var l layout
	require.NoError(t, json.Unmarshal([]byte(htmlUnescape(m[1])), &l))
	return l
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// assertOneLinePerActor checks the layout rules of docs/debug.md#the-page:
// nothing scrolls sideways, every row is one line of the same height.
func assertOneLinePerActor(t *testing.T, l layout, width int) {
	t.Helper()
	assert.Equal(t, float64(width), l.InnerWidth, "the viewport is the window's width")
	assert.LessOrEqual(t, l.ScrollWidth, l.InnerWidth, "no horizontal scroll")
	require.NotEmpty(t, l.Rows)
	single := l.Rows[0].Height
	assert.Positive(t, single)
	for i, r := range l.Rows {
		assert.Equal(t, single, r.Height, "row %d (%s) has a single row's height", i, r.Kind)
		assert.LessOrEqual(t, r.ScrollHeight, r.ClientHeight, "row %d (%s): nothing wrapped below the line", i, r.Kind)
		assert.LessOrEqual(t, r.Spread, single, "row %d (%s): every part sits on one line", i, r.Kind)
	}
}

// assertEssentialsSeen checks what must stay on screen at any width
// (docs/debug.md#the-page): every part of the totals line, the family
// ledger's badge among them, and each being's status and balance on its
// card, neither cut.
func assertEssentialsSeen(t *testing.T, l layout) {
	t.Helper()
	require.NotEmpty(t, l.TotalsSeen)
	for _, tot := range l.TotalsSeen {
		assert.True(t, tot.Seen, "the totals' %q is on screen", tot.Text)
	}
	for _, b := range l.Beings {
		assert.True(t, b.StatusSeen, "%s's status is on screen", b.Name)
		assert.True(t, b.BalanceSeen, "%s's balance is on screen", b.Name)
		assert.True(t, b.StatusWhole, "%s's status is not cut", b.Name)
		assert.True(t, b.BalanceWhole, "%s's balance is not cut", b.Name)
	}
}

// demoFamily runs `singularity demo` until all four beings have cycled
// twice, and returns its debug URL; the demo keeps running until the test
// ends, when it is interrupted and must exit 0.
func demoFamily(t *testing.T) string {
	t.Helper()
	bin := testkit.Singularity(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "demo", "--dir", t.TempDir(), "--cycle-interval-secs", "0.3")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(out)
	var debugURL string
	ready := false
	for !ready && lines.Scan() {
		line := lines.Text()
		if u, ok := strings.CutPrefix(line, "debug endpoint: "); ok {
			debugURL, _, _ = strings.Cut(u, " ")
		}
		if strings.HasPrefix(line, "  root cycle ") && debugURL != "" {
			ready = everyoneCycled(t, debugURL, 2)
		}
	}
	require.True(t, ready, "the demo family never came whole; stderr:\n%s", stderr.String())
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		defer cancel()
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		<-drained
		assert.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	})
	return strings.TrimSuffix(debugURL, "/debug/")
}

// lockedBuffer collects a process's stderr while the test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// everyoneCycled reports whether the tree holds every being of
// familyNames with at least n cycles.
func everyoneCycled(t *testing.T, base string, n int) bool {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(base, "/debug/") + "/debug/actors")
	require.NoError(t, err)
	defer resp.Body.Close()
	var tree map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tree))
	cycles := map[string]float64{}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["kind"] == "being" {
			c, _ := n["cycle"].(float64)
			cycles[fmt.Sprint(n["name"])] = c
		}
		kids, _ := n["children"].([]any)
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok {
				walk(m)
			}
		}
	}
	walk(tree)
	for _, name := range familyNames {
		if cycles[name] < float64(n) {
			return false
		}
	}
	return true
}

// TestDebugPageLayout renders the page of a living demo family at 800×600,
// 1280×800 and 1920×1080: every being's card has its name, status and
// balance on screen, as every part of the totals is, nothing scrolls
// sideways, every actor of the tree is one row of one line, each being's
// name links to its journal tail, each being's balance sparkline (drawn
// from its journal) is drawn full size, and a screenshot of each size is
// saved.
func TestDebugPageLayout(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("headless browser test skipped: %s is not installed (apt-get install chromium)", chromiumPath)
	}
	base := demoFamily(t)
	proxy := measuringProxy(t, base, len(familyNames))
	for _, size := range [][2]int{{800, 600}, {1280, 800}, {1920, 1080}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			l := measure(t, proxy.URL+"/debug/", w, h)
			assertOneLinePerActor(t, l, w)
			assertEssentialsSeen(t, l)
			names := map[string]bool{}
			for _, b := range l.Beings {
				names[b.Name] = true
				assert.Positive(t, b.NameWidth, "%s's name is rendered", b.Name)
				require.NotNil(t, b.Spark, "%s has a sparkline", b.Name)
				assert.Equal(t, 120.0, b.Spark.Width, "%s's sparkline is drawn full size", b.Name)
				assert.GreaterOrEqual(t, b.Points, 3, "%s's sparkline has its start and the debits of two cycles", b.Name)
				assert.Regexp(t, `^beings/[^/]+/journal\?tail=50&format=html$`, b.Href)
			}
			for _, name := range familyNames {
				assert.True(t, names[name], "%s is on the page", name)
			}
			assert.Contains(t, l.Totals, "4 beings")
			assert.Contains(t, l.Totals, "remaining")

			screenshot(t, base+"/debug/", w, h, fmt.Sprintf("debug-%dx%d.png", w, h))
		})
	}

	// The journal tail a row links to answers, as JSON lines and as a page.
	resp, err := http.Get(base + "/debug/actors")
	require.NoError(t, err)
	var tree struct {
		Children []struct {
			Kind string `json:"kind"`
			ID   string `json:"id"`
		} `json:"children"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tree))
	resp.Body.Close()
	var rootID string
	for _, c := range tree.Children {
		if c.Kind == "being" {
			rootID = c.ID
		}
	}
	require.NotEmpty(t, rootID)
	resp, err = http.Get(base + "/debug/beings/" + rootID + "/journal?tail=5")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	assert.Len(t, lines, 5)
	for _, line := range lines {
		assert.True(t, json.Valid([]byte(line)), line)
	}
	dom := chromium(t, "--virtual-time-budget=3000", "--dump-dom", base+"/debug/beings/"+rootID+"/journal?tail=20&format=html")
	assert.Contains(t, dom, "Journal of Ada")
	assert.Equal(t, 20, strings.Count(dom, `<td class="seq">`))
}

// TestDebugPageLayoutWithFamilyLedger renders a tree whose beings carry
// every ledger figure (starting, granted, spent, earned, remaining) and
// whose family node carries the totals and the family invariant, nested
// deep, at 800×600 and 1280×800: still one line per actor and no
// horizontal scroll, each being's status and balance on screen, and the
// totals line shows the figures and the invariant, all on screen.
func TestDebugPageLayoutWithFamilyLedger(t *testing.T) {
	spec := debugtest.Family()
	spec.Description.Figures = map[string]any{
		"starting": "10", "granted": "4.5", "spent": "0.123456789", "earned": "1.25", "remaining": "11.126543211",
		"invariant": "exact",
	}
	ledger := map[string]any{
		"id": "0b3a9d52-7c1e-4f7e-9d7a-1e2f3a4b5c6d", "starting": "10", "granted": "2.25", "spent": "0.004321",
		"earned": "123.456789", "remaining": "131.202468", "current_model": "some-provider/a-rather-long-model-name-v2",
		"waiting_for": "storage", "storage_attempts": 12, "storage_error": "no space left on device",
	}
	var deepen func(s *debugtest.Spec, depth int)
	deepen = func(s *debugtest.Spec, depth int) {
		if s.Description.Kind == "being" {
			for k, v := range ledger {
				s.Description.Figures[k] = v
			}
			s.Description.Name = "Being-with-a-rather-long-name-" + strconv.Itoa(depth)
			s.Description.Figures["last_action"] = "finance__finance_sell_report_to_a_long_list_of_buyers:indeterminate"
		}
		for i := range s.Children {
			deepen(&s.Children[i], depth+1)
		}
	}
	deepen(&spec, 0)
	srv := treeServer(t, spec)
	proxy := measuringProxy(t, srv.URL, 0)
	for _, size := range [][2]int{{800, 600}, {1280, 800}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			l := measure(t, proxy.URL+"/debug/", w, h)
			assertOneLinePerActor(t, l, w)
			assertEssentialsSeen(t, l)
			assert.Len(t, l.Beings, 2)
			for _, want := range []string{"starting10.00 USD", "granted4.50 USD", "spent0.12 USD", "earned1.25 USD", "remaining11.13 USD", "family ledger: exact"} {
				assert.Contains(t, l.Totals, want)
			}
			screenshot(t, srv.URL+"/debug/", w, h, fmt.Sprintf("debug-ledger-%dx%d.png", w, h))
		})
	}
}

// screenshot saves the page at width×height in the test's temp directory
// (and in DEBUG_SCREENSHOT_DIR, for a human look, when set), with
// Chromium's extra arguments args.
func screenshot(t *testing.T, pageURL string, w, h int, name string, args ...string) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), name)
	chromium(t, append(args, "--virtual-time-budget=15000", fmt.Sprintf("--window-size=%d,%d", w, h), "--screenshot="+shot, pageURL)...)
	raw, err := os.ReadFile(shot)
	require.NoError(t, err, "the screenshot exists")
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, w, img.Bounds().Dx())
	assert.Equal(t, h, img.Bounds().Dy())
	t.Logf("screenshot %s: %d bytes", shot, len(raw))
	if dir := os.Getenv("DEBUG_SCREENSHOT_DIR"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), raw, 0o644))
	}
}

// TestDebugPagePagesLargeFamilies: a family of 450 beings (each with its
// ledger and Las) is collapsed and paged: the ledger and Las rows are
// folded, 200 beings are drawn, the pager says where the page is, and
// the layout rules still hold.
func TestDebugPagePagesLargeFamilies(t *testing.T) {
	const n = 450
	spec := debugtest.Spec{ID: "family", Description: messages.Description{Kind: "family", Name: "family", Status: "running"}}
	for i := range n {
		spec.Children = append(spec.Children, debugtest.Spec{
			ID: fmt.Sprintf("being-%d", i),
			Description: messages.Description{Kind: "being", Name: fmt.Sprintf("B%03d", i), Status: "running", Figures: map[string]any{
				"id": fmt.Sprintf("b-%d", i), "cycle": i, "balance": "1.5", "earned": "0.5", "last_action": "echo__echo:success",
			}},
			Children: []debugtest.Spec{
				{ID: "ledger", Description: messages.Description{Kind: "ledger", Name: "ledger", Status: "solvent", Figures: map[string]any{"remaining": "1.5"}}},
				{ID: "las", Description: messages.Description{Kind: "las", Name: "las", Status: "running"}},
			},
		})
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(system.Shutdown)
	pid, err := debugtest.Spawn(system, spec)
	require.NoError(t, err)
	srv := httptest.NewServer(debug.Handler(debug.HandlerConfig{Root: system.Root, PID: pid, Deadline: 10 * time.Second}))
	t.Cleanup(srv.Close)

	proxy := measuringProxy(t, srv.URL, 0)
	l := measure(t, proxy.URL+"/debug/", 1280, 800)
	assertOneLinePerActor(t, l, 1280)
	assert.Len(t, l.Beings, 200, "one page of beings")
	assert.Len(t, l.Rows, 201, "the family row and the page's beings; ledger and Las folded")
	assert.Equal(t, "B000", l.Beings[0].Name)
	assert.Equal(t, "B199", l.Beings[199].Name)
	assert.Contains(t, l.Pager, "beings 1–200 of 450")
	assert.Contains(t, l.Totals, "450 beings")
	screenshot(t, srv.URL+"/debug/", 1280, 800, "debug-paged-1280x800.png")
}

// TestDebugPageWithoutJavaScript: a browser that runs no script still
// sees the family, because the server draws the tree: every actor has
// its row, the totals are there, and nothing says "loading". Chromium's
// switch that stops script also stops --dump-dom, so the page reaches it
// through a proxy that removes its script, as a browser without
// JavaScript would ignore it (TestDebugPageSparklinesWithoutJavaScript
// switches script off over the DevTools pipe instead).
func TestDebugPageWithoutJavaScript(t *testing.T) {
	spec := debugtest.Family()
	srv := treeServer(t, spec)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	direct := rp.Director
	rp.Director = func(req *http.Request) {
		direct(req)
		req.Host = u.Host
	}
	script := regexp.MustCompile(`(?s)<script>.*?</script>`)
	rp.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		require.True(t, script.Match(body), "the page has its script")
		body = script.ReplaceAll(body, nil)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	dom := chromium(t, "--virtual-time-budget=3000", "--dump-dom", proxy.URL+"/debug/")
	assert.NotContains(t, dom, "<script>")
	assert.NotContains(t, dom, "loading…")
	rows := regexp.MustCompile(`<div class="row" data-kind="(\w+)"`).FindAllStringSubmatch(dom, -1)
	var kinds []string
	for _, r := range rows {
		kinds = append(kinds, r[1])
	}
	assert.Equal(t, specKinds(spec), kinds, "one row per actor, depth first")
	assert.Contains(t, dom, `<span class="tot">`)
	assert.Contains(t, dom, "as of ")
}

// specKinds lists the kinds of spec's actors depth first.
func specKinds(s debugtest.Spec) []string {
	out := []string{s.Description.Kind}
	for _, c := range s.Children {
		out = append(out, specKinds(c)...)
	}
	return out
}
