package debug

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/store/money"
)

// The page is served drawn (docs/debug.md#the-page): the server renders
// the dashboard and the tree into page.html's empty elements, so a
// browser without JavaScript (or a text browser) shows the family, and
// the script only refreshes it by fetching the page again and putting
// the new parts in place of the old.

// pageSize is the number of beings drawn at once once a family is larger.
const pageSize = 200

// pageMoney are the ledger figures a row shows as columns, in order; the
// first four fold away on a narrow screen (class "minor"), the balance
// never does.
var pageMoney = []string{"starting", "granted", "spent", "earned", "remaining"}

// beingShown are a being's figures its tree row shows in columns of its
// own or leaves to its dashboard card; the rest go to the row's last
// column as key=value.
var beingShown = map[string]bool{"id": true, "cycle": true, "balance": true, "last_action": true, "last_reply": true,
	"starting": true, "granted": true, "spent": true, "earned": true, "remaining": true}

// The empty elements of page.html the server fills.
var (
	metaSlot   = []byte(`<span id="meta">loading…</span>`)
	totalsSlot = []byte(`<div id="totals"></div>`)
	pagerSlot  = []byte(`<div id="pager"></div>`)
	dashSlot   = []byte(`<section id="dash"></section>`)
	rowsSlot   = []byte(`<div id="rows"></div>`)
)

// renderPage returns page.html with the family drawn into it: the
// totals, the pager of a large family (pageNo is 0-based, clamped), one
// dashboard card per being of the page, each with its balance sparkline
// drawn from balances (its series as exact decimals, oldest first; nil
// draws none), and one tree row per actor, as of at. A template that
// fails leaves its slot empty.
func renderPage(tree Node, pageNo int, at time.Time, balances func(id string) []string) []byte {
	rows, cards, beings, pg := pageRows(&tree, pageNo)
	if balances != nil {
		for i := range cards {
			if cards[i].ID != "" {
				cards[i].Spark, cards[i].SparkTitle = sparkline(balances(cards[i].ID))
			}
		}
	}
	meta := `<span id="meta">as of ` + at.UTC().Format("15:04:05") + ` UTC; reload to refresh (the script refreshes every 2 s); metrics at /metrics</span>`
	out := bytes.Replace(page, metaSlot, []byte(meta), 1)
	fill := func(slot []byte, t *template.Template, data any) {
		var b bytes.Buffer
		if err := t.Execute(&b, data); err == nil {
			out = bytes.Replace(out, slot, b.Bytes(), 1)
		}
	}
	fill(totalsSlot, totalsTmpl, totalsOf(&tree, beings))
	fill(pagerSlot, pagerTmpl, pg)
	fill(dashSlot, dashTmpl, cards)
	fill(rowsSlot, rowsTmpl, rows)
	return out
}

// pageRow is one row of the tree as the template draws it.
type pageRow struct {
	Kind, Name, Status, Tone string
	Reason                   string // why a being's life ended, the badge's title
	PID                      string // the actor's id, the title of its kind and name
	Depth                    int    // indentation, at most 8
	Href, ID                 string // a being's journal link and id
	Nums                     []pageNum
	Rest, RestTitle          string
}

// pageCard is one being's dashboard card: what an operator reads first.
type pageCard struct {
	Name, Href, ID string
	Status, Tone   string
	Reason         string // why its life ended, or what holds it; shown as text
	Parent         string // the name of the being that spawned it; empty for the root
	Cycle          string
	// Balance is its remaining USD, exact as the ledger holds it.
	Balance string
	// Did is what it did last ("tool:status"), Waiting what its cycle
	// waits for now; Reply the first line of its last reply.
	Did, Waiting, Reply string
	// Spark is its sparkline as an SVG polyline's points, and SparkTitle
	// says what it shows; empty without a series.
	Spark, SparkTitle string
}

// sparkline draws a balance series as the script's sparkline does: a
// 120×18 box, the oldest point on the left, the lowest balance at the
// bottom; one point is a flat line. The points are for the eye only, so
// float64 is enough; the title says the exact ends as people read them.
func sparkline(series []string) (points, title string) {
	var vs []float64
	for _, s := range series {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", ""
		}
		vs = append(vs, v)
	}
	n := len(vs)
	if n == 0 {
		return "", ""
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	coords := make([]string, 0, n+1)
	for i, v := range vs {
		x := 60.0
		if n > 1 {
			x = 1 + float64(i)*118/float64(n-1)
		}
		y := 9.0
		if hi != lo {
			y = 16 - (v-lo)*14/(hi-lo)
		}
		coords = append(coords, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
	}
	if n == 1 {
		_, y, _ := strings.Cut(coords[0], ",")
		coords = append([]string{"1," + y}, coords...)
	}
	title = "balance over life: " + human(series[0]) + " → " + human(series[n-1]) + " USD (" + strconv.Itoa(n) + " points)"
	return strings.Join(coords, " "), title
}

// pageNum is one labelled figure of a row; a total carries its exact
// amount too (the title the mouse shows).
type pageNum struct{ Class, Label, Value, Exact string }

// pager says where a paged family's page is.
type pager struct {
	Paged              bool
	From, To, Of       int // beings shown, 1-based, of all
	Page, Pages        int // 1-based
	PrevHref, NextHref string
	HasPrev, HasNext   bool
}

// pageRows lists the tree's rows depth first, and a dashboard card for
// each being drawn: a family of more than pageSize beings has its ledger
// and Las rows folded into their being's, and only the beings of page
// (and what is below them) are drawn. It returns every being too, for
// the totals.
func pageRows(root *Node, pageNo int) ([]pageRow, []pageCard, []*Node, pager) {
	type entry struct {
		n      *Node
		depth  int
		index  int    // the being's position among the beings; -1 for others
		parent string // the name of the nearest being above it
	}
	var all []entry
	var beings []*Node
	var visit func(n *Node, depth int, parent string)
	visit = func(n *Node, depth int, parent string) {
		index := -1
		if n.Kind == "being" {
			beings = append(beings, n)
			index = len(beings) - 1
		}
		all = append(all, entry{n, depth, index, parent})
		if n.Kind == "being" {
			parent = n.Name
		}
		for i := range n.Children {
			visit(&n.Children[i], depth+1, parent)
		}
	}
	visit(root, 0, "")
	pages := max(1, (len(beings)+pageSize-1)/pageSize)
	pageNo = min(max(pageNo, 0), pages-1)
	paged := len(beings) > pageSize
	from, to := pageNo*pageSize, pageNo*pageSize+pageSize
	var rows []pageRow
	var cards []pageCard
	owner := -1
	for _, e := range all {
		if e.index >= 0 {
			owner = e.index
		}
		if paged {
			if e.n.Kind == "ledger" || e.n.Kind == "las" {
				continue
			}
			if (e.index >= 0 || owner >= 0 && e.depth > 1) && (owner < from || owner >= to) {
				continue
			}
		}
		rows = append(rows, rowOf(e.n, e.depth))
		if e.index >= 0 {
			cards = append(cards, cardOf(e.n, e.parent))
		}
	}
	pg := pager{Paged: paged, From: from + 1, To: min(to, len(beings)), Of: len(beings), Page: pageNo + 1, Pages: pages}
	if pageNo > 0 {
		pg.HasPrev, pg.PrevHref = true, "?page="+strconv.Itoa(pageNo)
	}
	if pageNo < pages-1 {
		pg.HasNext, pg.NextHref = true, "?page="+strconv.Itoa(pageNo+2)
	}
	return rows, cards, beings, pg
}

// cardOf is a being's dashboard card; parent names the being above it.
func cardOf(n *Node, parent string) pageCard {
	c := pageCard{Name: n.Name, Status: n.Status, Tone: tone(n.Status), Parent: parent, Cycle: "?"}
	c.ID, c.Href = journalLink(n)
	if v, ok := n.Figures["cycle"]; ok {
		c.Cycle = leafText(v)
	}
	c.Balance = "?"
	for _, k := range []string{"remaining", "balance"} {
		if a, ok := money.ParseJSONValue(n.Figures[k]); ok {
			c.Balance = a.String()
			break
		}
	}
	c.Reason = figureText(n.Figures["reason"])
	if c.Reason == "" && n.Status == "storage_unavailable" {
		c.Reason = figureText(n.Figures["storage_error"])
	}
	c.Did = figureText(n.Figures["last_action"])
	c.Waiting = figureText(n.Figures["waiting_for"])
	c.Reply = figureText(n.Figures["last_reply"])
	return c
}

// journalLink is a being's id and the link to its journal tail; both
// empty when the node carries no id.
func journalLink(n *Node) (id, href string) {
	id = figureText(n.Figures["id"])
	if id == "" {
		return "", ""
	}
	return id, "beings/" + url.PathEscape(id) + "/journal?tail=50&format=html"
}

// figureText is a figure that is a string, or "".
func figureText(v any) string {
	s, _ := v.(string)
	return s
}

// rowOf draws one node as a row of the tree. Each thing is said once: a
// name that is its kind is left out ("las", never "las las"), the pid is
// the title of the kind and name (shown only for a node that has neither),
// and a figure with nothing in it is not printed.
func rowOf(n *Node, depth int) pageRow {
	r := pageRow{Kind: n.Kind, Name: n.Name, Status: n.Status, Tone: tone(n.Status), PID: n.PID, Depth: min(depth, 8)}
	if r.Kind == "" {
		r.Kind = "?"
	}
	if r.Name == r.Kind {
		r.Name = ""
	}
	if r.Name == "" && n.Kind == "" {
		r.Name = n.PID // an actor that never described itself is known by its pid
	}
	shown := map[string]bool{}
	if n.Kind == "being" {
		r.Reason = figureText(n.Figures["reason"])
		r.ID, r.Href = journalLink(n)
		cycle := "?"
		if c, ok := n.Figures["cycle"]; ok {
			cycle = leafText(c)
		}
		r.Nums = append(r.Nums, pageNum{Class: "cyc", Label: "cycle", Value: cycle})
		if bal, ok := n.Figures["balance"]; ok {
			if _, both := n.Figures["remaining"]; !both {
				r.Nums = append(r.Nums, pageNum{Class: "major", Label: "balance", Value: human(bal)})
			}
		}
		for _, k := range pageMoney {
			if v, ok := n.Figures[k]; ok && v != nil {
				r.Nums = append(r.Nums, pageNum{Class: moneyClass(k), Label: k, Value: human(v)})
			}
		}
		shown = beingShown
	} else {
		for _, k := range pageMoney {
			switch v := n.Figures[k].(type) {
			case string, json.Number:
				r.Nums = append(r.Nums, pageNum{Class: moneyClass(k), Label: k, Value: human(v)})
				shown[k] = true
			}
		}
		if n.Kind == "family" {
			for k := range n.Figures {
				if strings.HasPrefix(k, "family_") {
					shown[k] = true
				}
			}
		}
	}
	rest := map[string]any{}
	for k, v := range n.Figures {
		if v := pruned(v); !shown[k] && v != nil {
			rest[k] = v
		}
	}
	var pairs []string
	flatten("", rest, &pairs)
	r.Rest, r.RestTitle = strings.Join(pairs, "  "), strings.Join(pairs, "\n")
	return r
}

// pruned is v without what says nothing: nil for an empty text, a null
// or an object with nothing left in it, and an object without such
// members, so no figure is ever printed as a bare "key=".
func pruned(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x := pruned(x); x != nil {
				out[k] = x
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

func moneyClass(k string) string {
	if k == "remaining" {
		return "major"
	}
	return "minor"
}

// tone is the colour of a status badge, as the script's tone.
func tone(status string) string {
	switch status {
	case "running", "solvent":
		return "good"
	case "throttled", "storage_unavailable", "starting", "stopping":
		return "warn"
	case "failed", "exhausted", StatusUnresponsive:
		return "bad"
	}
	return ""
}

// human shows a money figure as people read it (money.Amount.Human); a
// value that is not an amount is shown as it is.
func human(v any) string {
	if a, ok := money.ParseJSONValue(v); ok {
		return a.Human()
	}
	return leafText(v)
}

func leafText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// pageTotals is the totals line.
type pageTotals struct {
	Beings  string
	Figures []pageNum
	Ledger  string // the family invariant, "" when the tree has none
	Exact   bool
	Summed  bool // the figures are sums of the beings shown
}

// totalsOf is the totals line of the tree as the script's totals draws
// it: the family ledger's figures when the root carries them, otherwise
// the sums of the beings' own.
func totalsOf(root *Node, beings []*Node) pageTotals {
	t := pageTotals{Beings: strconv.Itoa(len(beings)) + " beings"}
	if len(beings) == 1 {
		t.Beings = "1 being"
	}
	src := root.Figures
	if nested, ok := root.Figures["totals"].(map[string]any); ok {
		src = nested
	}
	for _, k := range pageMoney {
		v, ok := src[k]
		if !ok {
			v, ok = src["family_"+k]
		}
		if !ok {
			sum, any := money.Amount{}, false
			for _, b := range beings {
				x, found := b.Figures[k]
				if !found && k == "remaining" {
					x, found = b.Figures["balance"]
				}
				if a, ok := money.ParseJSONValue(x); found && ok {
					sum, any = sum.Add(a), true
				}
			}
			if !any {
				continue
			}
			v, t.Summed = sum.String(), true
		}
		t.Figures = append(t.Figures, pageNum{Label: k, Value: human(v) + " USD", Exact: leafText(v) + " USD"})
	}
	for _, k := range []string{"invariant", "family_invariant", FigureFamilyLedger} {
		if v, ok := src[k]; ok {
			t.Ledger = leafText(v)
			t.Exact = strings.HasPrefix(t.Ledger, "exact")
			t.Summed = false
			break
		}
	}
	return t
}

var (
	totalsTmpl = template.Must(template.New("totals").Parse(`<div id="totals">` +
		`<span class="tot">{{.Beings}}</span>` +
		`{{range .Figures}}<span class="tot" title="{{.Label}} {{.Exact}}"><b>{{.Label}}</b>{{.Value}}</span>{{end}}` +
		`{{if .Ledger}}<span class="tot inv" data-ok="{{if .Exact}}yes{{else}}no{{end}}">family ledger: {{.Ledger}}</span>` +
		`{{else if .Summed}}<span class="tot">(sums of the beings shown)</span>{{end}}</div>`))
	pagerTmpl = template.Must(template.New("pager").Parse(`<div id="pager">{{if .Paged}}` +
		`{{if .HasPrev}}<a href="{{.PrevHref}}">‹ previous</a>{{end}}` +
		`<span> beings {{.From}}–{{.To}} of {{.Of}} (ledger and Las rows folded; page {{.Page}} of {{.Pages}}) </span>` +
		`{{if .HasNext}}<a href="{{.NextHref}}">next ›</a>{{end}}{{end}}</div>`))
	// dashTmpl draws the dashboard: one card per being, its status and
	// why as text, its exact balance, sparkline, last action and reply.
	dashTmpl = template.Must(template.New("dash").Parse(`<section id="dash">{{range .}}` +
		`<div class="card" data-tone="{{.Tone}}"{{if .ID}} data-being="{{.ID}}"{{end}}>` +
		`<div class="head">{{if .Href}}<a class="name" href="{{.Href}}" title="{{.Name}} ({{.ID}}): journal">{{.Name}}</a>{{else}}<span class="name" title="{{.Name}}">{{.Name}}</span>{{end}}` +
		`<span class="status" data-status="{{.Status}}" data-tone="{{.Tone}}">{{.Status}}</span>` +
		`<span class="bal" title="remaining {{.Balance}} USD">{{.Balance}} USD</span></div>` +
		`{{if .Reason}}<div class="why" data-tone="{{.Tone}}">{{.Reason}}</div>{{end}}` +
		`<div class="life"><svg class="spark" viewBox="0 0 120 18" width="120" height="18"{{if .ID}} data-being="{{.ID}}"{{end}}><line x1="0" x2="120" y1="17.5" y2="17.5"></line>` +
		`{{if .Spark}}<polyline points="{{.Spark}}"></polyline><title>{{.SparkTitle}}</title>{{end}}</svg>` +
		`<span>cycle {{.Cycle}}</span>{{if .Waiting}}<span class="wait">waiting for {{.Waiting}}</span>{{end}}` +
		`{{if .Parent}}<span class="parent" title="child of {{.Parent}}">child of {{.Parent}}</span>{{end}}</div>` +
		`<div class="did" title="{{if .Did}}last {{.Did}}{{else}}no action yet{{end}}"><b>did</b>{{if .Did}}{{.Did}}{{else}}no action yet{{end}}</div>` +
		`<div class="said"{{if .Reply}} title="{{.Reply}}"{{end}}><b>said</b>{{if .Reply}}<q>{{.Reply}}</q>{{else}}<span class="none">nothing yet</span>{{end}}</div>` +
		`</div>{{end}}</section>`))
	rowsTmpl = template.Must(template.New("rows").Parse(`<div id="rows">{{range .}}` +
		`<div class="row" data-kind="{{.Kind}}"><span class="who"{{if .PID}} title="{{.PID}}"{{end}}><span class="indent d{{.Depth}}"></span><span class="kind">{{.Kind}}</span>` +
		`{{if .Href}}<a class="name" href="{{.Href}}" title="{{.Name}} ({{.ID}}): journal">{{.Name}}</a>{{else}}<span class="name">{{.Name}}</span>{{end}}</span>` +
		`<span class="status" data-status="{{.Status}}" data-tone="{{.Tone}}"{{if .Reason}} title="{{.Status}}: {{.Reason}}"{{end}}>{{.Status}}</span>` +
		`{{range .Nums}}<span class="num {{.Class}}" title="{{.Label}} {{.Value}}"><b>{{.Label}}</b>{{.Value}}</span>{{end}}` +
		`{{if .Rest}}<span class="rest" title="{{.RestTitle}}">{{.Rest}}</span>{{end}}</div>` +
		`{{end}}</div>`))
)
