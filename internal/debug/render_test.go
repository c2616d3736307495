package debug

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/debugtest"
	"github.com/wisent/singularity/test/testkit"
)

var renderedAt = time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)

// smallFamily is a family of one being with its ledger and Las.
func smallFamily() Node {
	return Node{PID: "family", Kind: "family", Name: "family", Status: "running", Children: []Node{
		{PID: "family/brama", Kind: "brama", Name: "brama", Status: "running"},
		{PID: "family/being-ada", Kind: "being", Name: "Ada <the first>", Status: "running",
			Figures: map[string]any{"id": "ada/1", "cycle": "7", "starting": "10", "granted": "0", "spent": "0.123456789",
				"earned": "1.25", "remaining": "11.126543211", "last_action": "echo__echo:success", "current_model": "m"},
			Children: []Node{
				{PID: "family/being-ada/ledger", Kind: "ledger", Name: "ledger", Status: "solvent", Figures: map[string]any{"remaining": "11.126543211"}},
				{PID: "family/being-ada/las", Kind: "las", Name: "las", Status: "running"},
			}},
	}}
}

// TestRenderPageDrawsTheTree: the page is served with the family already
// drawn — totals with the family ledger's badge, a card per being, a row
// per actor — names escaped, and the script and style untouched, so the
// Content-Security-Policy's hashes still hold.
func TestRenderPageDrawsTheTree(t *testing.T) {
	tree := smallFamily()
	AddFamilyLedger(&tree)
	html := string(renderPage(tree, 0, renderedAt, nil))

	assert.Equal(t, 5, strings.Count(html, `<div class="row" `), "one row per actor")
	assert.Contains(t, html, `<span class="tot">1 being</span>`)
	assert.Contains(t, html, `<span class="tot" title="remaining 11.126543211 USD"><b>remaining</b>11.13 USD</span>`, "the exact total is the title")
	assert.Contains(t, html, `<span class="tot inv" data-ok="yes">family ledger: exact</span>`)
	assert.Contains(t, html, `<a class="name" href="beings/ada%2F1/journal?tail=50&amp;format=html"`)
	assert.Contains(t, html, `>Ada &lt;the first&gt;</a>`)
	assert.NotContains(t, html, "<the first>")
	assert.Contains(t, html, `<span class="status" data-status="solvent" data-tone="good">solvent</span>`)
	assert.Contains(t, html, `<span class="num major" title="remaining 11.13"><b>remaining</b>11.13</span>`)
	assert.Contains(t, html, `<span class="num minor" title="spent 0.12"><b>spent</b>0.12</span>`)
	assert.Contains(t, html, `<b>did</b>echo__echo:success</div>`)
	assert.Contains(t, html, `<span class="bal" title="remaining 11.126543211 USD">11.126543211 USD</span>`, "the card's balance is exact")
	assert.Contains(t, html, `<span class="rest" title="current_model=m">current_model=m</span>`)
	assert.Contains(t, html, `<span class="who" title="family/being-ada">`, "the pid is the title")
	assert.Contains(t, html, `as of 01:02:03 UTC`)
	assert.NotContains(t, html, "loading…")
	assert.Equal(t, pageCSP, contentSecurityPolicy([]byte(html)), "the script and the style are served as hashed")
}

func TestRenderPagePagesLargeFamilies(t *testing.T) {
	tree := Node{PID: "family", Kind: "family", Name: "family", Status: "running"}
	for i := range 450 {
		tree.Children = append(tree.Children, Node{PID: fmt.Sprintf("family/being-%d", i), Kind: "being", Name: fmt.Sprintf("B%03d", i), Status: "running",
			Figures:  map[string]any{"id": fmt.Sprintf("b-%d", i), "cycle": "1", "balance": "1.5"},
			Children: []Node{{PID: "l", Kind: "ledger", Name: "ledger", Status: "solvent"}, {PID: "s", Kind: "las", Name: "las", Status: "running"}}})
	}
	name := regexp.MustCompile(`<span class="kind">being</span><a [^>]*>(B\d{3})</a>`)
	tests := []struct {
		page         int
		first, last  string
		pager        string
		prev, next   bool
		wantedBeings int
	}{
		{0, "B000", "B199", "beings 1–200 of 450 (ledger and Las rows folded; page 1 of 3)", false, true, 200},
		{2, "B400", "B449", "beings 401–450 of 450 (ledger and Las rows folded; page 3 of 3)", true, false, 50},
		{9, "B400", "B449", "page 3 of 3", true, false, 50},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("page ", tt.page), func(t *testing.T) {
			html := string(renderPage(tree, tt.page, renderedAt, nil))
			names := name.FindAllStringSubmatch(html, -1)
			require.Len(t, names, tt.wantedBeings)
			assert.Equal(t, tt.first, names[0][1])
			assert.Equal(t, tt.last, names[len(names)-1][1])
			assert.Equal(t, tt.wantedBeings+1, strings.Count(html, `<div class="row" `), "the family row and the page's beings; ledger and Las folded")
			assert.Equal(t, tt.wantedBeings, strings.Count(html, `<div class="card" `), "a card for each being of the page")
			assert.Contains(t, html, tt.pager)
			assert.Equal(t, tt.prev, strings.Contains(html, "‹ previous</a>"))
			assert.Equal(t, tt.next, strings.Contains(html, "next ›</a>"))
			assert.Contains(t, html, "450 beings")
		})
	}
}

// TestRenderTotalsWithoutFamilyLedger: beings that carry only a balance
// are summed, and the line says so.
func TestRenderTotalsWithoutFamilyLedger(t *testing.T) {
	tree := Node{PID: "family", Kind: "family", Name: "family", Status: "running", Children: []Node{
		{PID: "a", Kind: "being", Name: "A", Status: "running", Figures: map[string]any{"balance": "1.005"}},
		{PID: "b", Kind: "being", Name: "B", Status: "running", Figures: map[string]any{"balance": "2"}},
	}}
	got := totalsOf(&tree, []*Node{&tree.Children[0], &tree.Children[1]})
	assert.Equal(t, pageTotals{Beings: "2 beings", Figures: []pageNum{{Label: "remaining", Value: "3.01 USD", Exact: "3.005 USD"}}, Summed: true}, got)
}

// TestRenderPageSaysEachThingOnce: no row of the tree prints a figure
// with nothing in it as a bare "key=" (nested ones included), none says
// a name twice (an actor whose name is its kind, the family's pid), and
// an actor that never described itself is known by its pid.
func TestRenderPageSaysEachThingOnce(t *testing.T) {
	tree := smallFamily()
	las := &tree.Children[1].Children[1]
	las.Figures = map[string]any{"last_restart_reason": "", "restarts": 0, "note": nil,
		"errors": map[string]any{"permanent": "", "transient": 2}, "empty": map[string]any{"x": nil}}
	tree.Children[1].Figures["last_failure"] = ""
	tree.Children = append(tree.Children, Node{PID: "family/stuck", Status: StatusUnresponsive})
	html := string(renderPage(tree, 0, renderedAt, nil))

	want := []string{
		"family running",
		"brama running",
		"being Ada <the first> running cycle 7 starting 10.00 granted 0.00 spent 0.12 earned 1.25 remaining 11.13 current_model=m",
		"ledger solvent remaining 11.13",
		"las running errors.transient=2 restarts=0",
		"? family/stuck unresponsive",
	}
	assert.Equal(t, want, rowTexts(html))
	assert.NotRegexp(t, `=(\s|<|"|$)`, strings.Join(rowTexts(html), "\n"), "no empty key=")
}

// rowTexts is the text of each row of the tree in html, as a reader
// sees it: tags dropped, entities decoded, spaces folded.
func rowTexts(html string) []string {
	_, rows, _ := strings.Cut(html, `<div id="rows">`)
	rows, _, _ = strings.Cut(rows, "<script>")
	tag := regexp.MustCompile(`<[^>]*>`)
	var out []string
	for _, r := range strings.Split(rows, `<div class="row" `)[1:] {
		r = tag.ReplaceAllString("<"+r, " ")
		r = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&amp;", "&").Replace(r)
		out = append(out, strings.Join(strings.Fields(r), " "))
	}
	return out
}

// TestRenderPageDashboardFirst: the page leads with one card per being,
// before the tree, the ended one's included: its status and why as text,
// its exact balance, what it did last and what it waits for, and the
// first line of its last reply, escaped.
func TestRenderPageDashboardFirst(t *testing.T) {
	tree := smallFamily()
	ada := &tree.Children[1]
	ada.Figures["waiting_for"] = "model"
	ada.Figures["last_reply"] = `<b>Sold</b> one report & "more"`
	ada.Children = append(ada.Children, Node{Kind: "being", Name: "Bo", Status: "exhausted", Figures: map[string]any{
		"id": "c-bo", "cycle": 7, "remaining": "0.000999999", "reason": "balance 0.000999999 USD cannot pay the next call",
		"last_action": "", FigureActor: "gone"}})
	html := string(renderPage(tree, 0, renderedAt, func(id string) []string { return []string{"10", "9.5"} }))

	dash, rows := strings.Index(html, `<section id="dash">`), strings.Index(html, `<div id="rows">`)
	require.Positive(t, dash)
	assert.Less(t, dash, rows, "the dashboard comes before the tree")
	cards := regexp.MustCompile(`(?s)<div class="card" .*?</div></div>`).FindAllString(html[dash:rows], -1)
	require.Len(t, cards, 2)
	for _, want := range []string{
		`data-tone="good" data-being="ada/1"`,
		`>Ada &lt;the first&gt;</a><span class="status" data-status="running" data-tone="good">running</span>`,
		`11.126543211 USD</span>`,
		`<span>cycle 7</span><span class="wait">waiting for model</span></div>`,
		`<b>did</b>echo__echo:success</div>`,
		`<q>&lt;b&gt;Sold&lt;/b&gt; one report &amp; &#34;more&#34;</q>`,
		`<polyline points="1.0,2.0 119.0,16.0"></polyline>`,
	} {
		assert.Contains(t, cards[0], want)
	}
	assert.NotContains(t, cards[0], "child of", "the root has no parent")
	for _, want := range []string{
		`data-tone="bad" data-being="c-bo"`,
		`<span class="status" data-status="exhausted" data-tone="bad">exhausted</span>`,
		`<div class="why" data-tone="bad">balance 0.000999999 USD cannot pay the next call</div>`,
		`0.000999999 USD</span>`,
		`child of Ada &lt;the first&gt;</span>`,
		`<b>did</b>no action yet</div>`,
		`<b>said</b><span class="none">nothing yet</span>`,
	} {
		assert.Contains(t, cards[1], want)
	}
}

// TestPageDrawsSparklinesOnTheServer: the page as served carries each
// being's balance sparkline drawn from its journal (1 → 0.9 → 1.4), so a
// browser without JavaScript shows it; a being of one point gets a
// flat line.
func TestPageDrawsSparklinesOnTheServer(t *testing.T) {
	root := familyOnDisk(t)
	spec := debugtest.Spec{ID: "family", Description: messages.Description{Kind: "family", Name: "family", Status: "running"},
		Children: []debugtest.Spec{{ID: "being-ada", Description: messages.Description{Kind: "being", Name: "Ada", Status: "running",
			Figures: map[string]any{"id": testkit.Identity().AgentID, "cycle": 1, "balance": "1.4"}}}}}
	system, pid := spawnTree(t, spec)
	srv := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, StateDir: root}))
	t.Cleanup(srv.Close)

	_, page := do(t, "GET", srv.URL+"/debug/")
	assert.Contains(t, page, `<polyline points="1.0,13.2 60.0,16.0 119.0,2.0"></polyline><title>balance over life: 1.00 → 1.40 USD (3 points)</title>`)
	assert.Contains(t, page, `<polyline points="1,9.0 60.0,9.0"></polyline>`, "Bo, gone, has one point: a flat line")
	assert.Equal(t, 2, strings.Count(page, `<svg class="spark"`))
}

func TestSparkline(t *testing.T) {
	for _, tt := range []struct {
		name          string
		series        []string
		points, title string
	}{
		{"none", nil, "", ""},
		{"one point is a flat line", []string{"5"}, "1,9.0 60.0,9.0", "balance over life: 5.00 → 5.00 USD (1 points)"},
		{"flat", []string{"2", "2"}, "1.0,9.0 119.0,9.0", "balance over life: 2.00 → 2.00 USD (2 points)"},
		{"falling", []string{"10", "0.001"}, "1.0,2.0 119.0,16.0", "balance over life: 10.00 → 0.001000 USD (2 points)"},
		{"unreadable", []string{"x"}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			points, title := sparkline(tt.series)
			assert.Equal(t, tt.points, points)
			assert.Equal(t, tt.title, title)
		})
	}
}

// TestRenderPageShowsASleepingBeing: a sleeping being's row shows its
// status, sleeping until its time, and its unread messages.
func TestRenderPageShowsASleepingBeing(t *testing.T) {
	tree := smallFamily()
	ada := &tree.Children[1]
	ada.Status = "sleeping until 2026-12-07T22:00:00Z"
	ada.Figures["sleeping_until"] = "2026-12-07T22:00:00Z"
	ada.Figures["unread_messages"] = 2
	html := string(renderPage(tree, 0, renderedAt, nil))
	assert.Contains(t, html, `<span class="status" data-status="sleeping until 2026-12-07T22:00:00Z" data-tone="">sleeping until 2026-12-07T22:00:00Z</span>`)
	assert.Contains(t, html, `unread_messages=2`)
}
