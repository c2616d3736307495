package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

// exhaustedReason is the reason the exhausted child's state.json keeps.
const exhaustedReason = "balance 0.001 USD cannot pay the next completion's reserve 0.002 USD"

// boReply is the exhausted child's last reply: its first line is what
// the page shows, as text.
const boReply = "Out of money <for now> & \"done\".\nA second line the page leaves out."

// endedFamily writes a family on disk whose child Bo exhausted its money
// (its actor is gone), and serves the debug handler over the tree of the
// living root Ada, whose figures are her state.json's, with her ledger
// and Las as the runtime names them; it returns the root's state
// directory, the server and the count of the page's fetches.
func endedFamily(t *testing.T) (string, *httptest.Server, *atomic.Int32) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "state")
	at := debugtest.At
	write := debugtest.WriteBeing
	write(t, root, "Ada", "10", func(st *state.Being) {
		st.Budget.Granted = testkit.USD("2")
		st.Budget.Remaining = testkit.USD("8")
		st.Cycle = 3
		grant := testkit.USD("2")
		st.Mind.Children = []state.Child{{ID: "c-bo", Name: "Bo", Ticker: "BO", StateDir: filepath.Join("children", "c-bo"),
			CreatedAt: at, Status: "exhausted", Endowment: &grant}}
	}, state.Started(at), state.CycleStarted(at, 1), state.Debited(at, 1, testkit.USD("0.25"), money.Zero, 10))
	write(t, filepath.Join(root, "children", "c-bo"), "Bo", "2", func(st *state.Being) {
		st.Status = "exhausted"
		st.StatusReason = exhaustedReason
		st.Cycle = 7
		st.Conversation = []chat.Message{{Role: "user", Content: "go on"}, {Role: "assistant", Content: boReply}}
	}, state.Started(at), state.CycleStarted(at, 1), state.Debited(at, 1, testkit.USD("1.999"), money.Zero, 10))

	spec := debugtest.Spec{ID: "family", Description: messages.Description{Kind: "family", Name: "family", Status: "running"},
		Children: []debugtest.Spec{{ID: "being-ada", Description: messages.Description{Kind: "being", Name: "Ada", Status: "running",
			Figures: map[string]any{"id": testkit.Identity().AgentID, "cycle": 3, "balance": "7.75", "starting": "10", "granted": "2",
				"spent": "0.25", "earned": "0", "remaining": "7.75", "last_action": "echo__echo:success",
				// What Bo held when his life ended, as his parent counts it.
				"departed_held": "2", "departed_earned": "0", "last_reply": "Selling reports.", "last_failure": ""}},
			Children: []debugtest.Spec{
				{ID: "ledger", Description: messages.Description{Kind: "ledger", Name: "Ada", Status: "solvent",
					Figures: map[string]any{"starting": "10", "remaining": "7.75", "spent": "0.25", "earned": "0", "granted": "2"}}},
				{ID: "las", Description: messages.Description{Kind: "las", Name: "las", Status: "running",
					Figures: map[string]any{"tool_count": 1, "restarts": 0, "last_restart_reason": "", "process_id": 4242}}},
			}}}}
	var fetches atomic.Int32
	srv := treeServerCounting(t, spec, &fetches, root)
	return root, srv, &fetches
}

// statusTotals runs `singularity status --format json` on the family in
// root and returns its totals.
func statusTotals(t *testing.T, root string) map[string]any {
	t.Helper()
	out, err := exec.Command(testkit.Singularity(t), "status", "--state-dir", root, "--format", "json").Output()
	require.NoError(t, err)
	var st struct {
		Totals map[string]any `json:"totals"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	return st.Totals
}

var (
	beingsTotalRE = regexp.MustCompile(`<span class="tot">(\d+) beings?</span>`)
	moneyTotalRE  = regexp.MustCompile(`<span class="tot" title="(\w+) (\S+) USD">`)
)

// TestDebugPageAgreesWithStatus: with a child that exhausted its money,
// the page (drawn by its script) shows both beings, the child with its
// status and the reason its life ended, and the family's totals, exact in
// their titles, are the ones `singularity status --format json` prints.
func TestDebugPageAgreesWithStatus(t *testing.T) {
	root, srv, fetches := endedFamily(t)
	want := statusTotals(t, root)
	dom := chromium(t, "--virtual-time-budget=3000", "--dump-dom", srv.URL+"/debug/")
	require.Contains(t, dom, "updated ", "the script drew the page")
	require.GreaterOrEqual(t, fetches.Load(), int32(2), "loaded, then refreshed by the script")

	m := beingsTotalRE.FindStringSubmatch(dom)
	require.NotNil(t, m, "the totals count the beings")
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.Equal(t, want["beings"], float64(n), "the page counts the beings status counts")
	assert.Equal(t, 2, n)
	got := map[string]string{}
	for _, m := range moneyTotalRE.FindAllStringSubmatch(dom, -1) {
		got[m[1]] = m[2]
	}
	for _, k := range []string{"starting", "granted", "spent", "earned", "remaining"} {
		assert.Equal(t, want[k], got[k], "the family's %s", k)
	}
	assert.Contains(t, dom, `data-status="exhausted"`)
	assert.Contains(t, dom, ">Bo</a>")
	assert.Contains(t, dom, htmlEscape(exhaustedReason))
	assert.Contains(t, dom, "family ledger: exact")
	for _, w := range []int{800, 1280} {
		screenshot(t, srv.URL+"/debug/", w, 500, fmt.Sprintf("page-%d.png", w))
	}
}

// TestDebugPageSparklinesWithoutJavaScript: with script execution
// switched off in Chromium, the page is the server's alone: it is never
// fetched again, says "as of", and each being's card carries its
// balance sparkline drawn from its journal, the ended child's included.
func TestDebugPageSparklinesWithoutJavaScript(t *testing.T) {
	_, srv, fetches := endedFamily(t)
	dom, shot := withoutScript(t, srv.URL+"/debug/", 1280, 500)
	assert.Equal(t, int32(1), fetches.Load(), "no script ran: the page was loaded once")
	assert.Contains(t, dom, `<span id="meta">as of `, "the server's words, not the script's")
	sparks := regexp.MustCompile(`<svg class="spark"[^>]*data-being="([^"]+)"[^>]*><line[^>]*></line><polyline points="([^"]+)"></polyline><title>([^<]+)</title></svg>`).FindAllStringSubmatch(dom, -1)
	require.Len(t, sparks, 2, "Ada's and Bo's")
	for _, s := range sparks {
		assert.GreaterOrEqual(t, len(strings.Fields(s[2])), 2, "%s's line has points", s[1])
		assert.Contains(t, s[3], "balance over life: ")
	}
	assert.Equal(t, "c-bo", sparks[1][1])
	assert.Contains(t, sparks[1][3], "→ 0.001000 USD", "Bo's line ends at his last balance")
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Equal(t, 1280, img.Bounds().Dx())
	if dir := os.Getenv("DEBUG_SCREENSHOT_DIR"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "page-nojs-1280.png"), shot, 0o644))
	}
}

// htmlEscape is s as the DOM dump writes text.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestDebugPageDashboard: at 800 and 1280 px, with script and without,
// the page leads with the beings' dashboard and has the actor tree below
// it; the exhausted child's card says its status and why as visible text
// (not only a title), its exact balance, and the first line of its last
// reply, escaped; and no text says a name twice ("family family", "las
// las") or prints a figure as a bare "key=". Screenshots of each go to
// DEBUG_SCREENSHOT_DIR when it is set.
func TestDebugPageDashboard(t *testing.T) {
	_, srv, _ := endedFamily(t)
	const height = 800
	bo := `.card[data-being="c-bo"]`
	sels := []string{"#dash", "#rows", bo, bo + " .status", bo + " .why", bo + " .bal", bo + " .said q", `.card[data-being="` + testkit.Identity().AgentID + `"] .said q`}
	firstLine, _, _ := strings.Cut(boReply, "\n")
	for _, tt := range []struct {
		name   string
		width  int
		script bool
	}{
		{"800", 800, true},
		{"1280", 1280, true},
		{"nojs-800", 800, false},
		{"nojs-1280", 1280, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := look(t, srv.URL+"/debug/", tt.width, height, tt.script, sels...)
			if tt.script {
				assert.Contains(t, v.dom, `<span id="meta">updated `, "the script refreshed the page")
			} else {
				assert.Contains(t, v.dom, `<span id="meta">as of `, "the server's page alone")
			}
			dash, rows := strings.Index(v.dom, `<section id="dash">`), strings.Index(v.dom, `<div id="rows">`)
			require.Positive(t, dash)
			assert.Less(t, dash, rows, "the dashboard comes before the tree")
			assert.Less(t, v.boxes["#dash"].Bottom, v.boxes["#rows"].Top, "and is drawn above it")
			assert.Equal(t, 2, strings.Count(v.dom, `<div class="card" `), "a card per being, the ended one's included")

			for _, sel := range sels[2:] {
				b, ok := v.boxes[sel]
				require.True(t, ok, "%s is on the page", sel)
				assert.True(t, b.seen(tt.width, height), "%s is drawn on screen: %+v", sel, b)
			}
			assert.Equal(t, "exhausted", visibleText(v.html[bo+" .status"]))
			assert.Equal(t, exhaustedReason, visibleText(v.html[bo+" .why"]), "why, as text")
			assert.NotContains(t, v.html[bo+" .why"], "title=", "not a tooltip")
			assert.Equal(t, "0.001 USD", visibleText(v.html[bo+" .bal"]), "the balance, exact")
			assert.Equal(t, firstLine, visibleText(v.html[bo+" .said q"]), "the first line of the last reply")
			assert.Contains(t, v.html[bo+" .said q"], "&lt;for now&gt; &amp;", "escaped")
			card := v.boxes[bo]
			for _, part := range []string{" .status", " .why", " .bal"} {
				b := v.boxes[bo+part]
				assert.True(t, b.Left >= card.Left && b.Right <= card.Right && b.Top >= card.Top && b.Bottom <= card.Bottom,
					"%s is inside its card: %+v in %+v", part, b, card)
			}

			text := visibleText(v.dom)
			for _, twice := range []string{"family family", "las las", "Ada Ada", "ledger ledger"} {
				assert.NotContains(t, text, twice)
			}
			assert.NotRegexp(t, `\S=(\s|$)`, text, "no figure is a bare key=")
			assert.Contains(t, text, "restarts=0", "the Las row keeps its figures")

			img, err := png.Decode(bytes.NewReader(v.png))
			require.NoError(t, err)
			assert.Equal(t, tt.width, img.Bounds().Dx())
			if dir := os.Getenv("DEBUG_SCREENSHOT_DIR"); dir != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "dash-"+tt.name+".png"), v.png, 0o644))
			}
		})
	}
}

// visibleText is the text a reader sees of html: its script and style
// dropped, tags (and so their attributes) dropped, entities decoded, and
// spaces folded.
func visibleText(html string) string {
	html = regexp.MustCompile(`(?s)<(script|style|title)>.*?</(script|style|title)>`).ReplaceAllString(html, " ")
	html = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, " ")
	html = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(html)
	return strings.Join(strings.Fields(html), " ")
}
