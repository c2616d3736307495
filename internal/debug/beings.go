package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
)

// Journal tail bounds (docs/debug.md#routes).
const (
	defaultTail = 50
	maxTail     = 1000
	// seriesPoints bounds a balance sparkline.
	seriesPoints = 240
)

// beings serves the per-being routes from the family's state directories,
// read-only: the journal tail and the balance series. It remembers each
// being's directory and its balance series between requests, so a
// sparkline costs only the journal lines written since the last look.
type beings struct {
	root string // the root being's state directory; empty: routes are off
	// life reads a being's committed events, for a family across
	// processes (HandlerConfig.Committed); nil reads its journal files.
	life Committed
	// secrets are redacted from the journal lines served
	// (HandlerConfig.Secrets).
	secrets *boundary.Secrets

	mu     sync.Mutex
	walked time.Time // the last walk of the family's directories
	dirs   map[string]journalview.Being
	series map[string]*journalview.Series
}

// Committed reads, for a family across processes, the committed events
// of the being in dir past seq after, in order, and of them only the
// newest n when n is not negative.
type Committed func(ctx context.Context, dir string, after uint64, n int) ([]state.Event, error)

func newBeings(root string, life Committed, secrets *boundary.Secrets) *beings {
	return &beings{root: root, life: life, secrets: secrets, dirs: map[string]journalview.Being{}, series: map[string]*journalview.Series{}}
}

// find returns the being with agent id id, walking the family again when
// it is not known yet (a child spawned since).
func (s *beings) find(id string) (journalview.Being, bool) {
	if s.root == "" || !journalview.ValidID(id) {
		return journalview.Being{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.dirs[id]; ok {
		return b, true
	}
	// Walk again at most once a second, however many unknown ids are
	// asked for.
	now := time.Now()
	if now.Sub(s.walked) < time.Second {
		return journalview.Being{}, false
	}
	s.walked = now
	family, err := journalview.Family(s.root)
	if err != nil {
		return journalview.Being{}, false
	}
	for _, b := range family {
		s.dirs[b.ID] = b
	}
	b, ok := s.dirs[id]
	return b, ok
}

// serveBalance answers GET /debug/beings/{id}/balance: the being's
// balance over its life as {"id", "points": [{"seq", "at", "balance"}]},
// at most seriesPoints points.
func (s *beings) serveBalance(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	b, ok := s.find(id)
	if !ok {
		http.NotFound(w, r)
		return
	}
	points, err := s.points(r.Context(), b)
	raw, jerr := json.Marshal(map[string]any{"id": b.ID, "points": points})
	if err != nil && len(points) <= 1 || jerr != nil {
		http.Error(w, "cannot read the journal", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(raw, '\n'))
}

// points is the balance series of b, brought up to date.
func (s *beings) points(ctx context.Context, b journalview.Being) ([]journalview.Point, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	series, ok := s.series[b.ID]
	if !ok {
		series = s.newSeries(b)
		s.series[b.ID] = series
	}
	return s.update(ctx, b, series)
}

// balances is the balance series of the being with agent id id, as the
// page's server-drawn sparkline takes it; nil when it has none.
func (s *beings) balances(ctx context.Context, id string) []string {
	b, ok := s.find(id)
	if !ok {
		return nil
	}
	points, err := s.points(ctx, b)
	if err != nil && len(points) <= 1 {
		return nil
	}
	out := make([]string, len(points))
	for i, p := range points {
		out[i] = p.Balance
	}
	return out
}

// serveJournal answers GET /debug/beings/{id}/journal?tail=N: the
// being's last N events (default 50, at most 1000) as JSON lines, each
// screened by the redaction guard; format=html renders them as a small
// table page.
func (s *beings) serveJournal(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := defaultTail
	if t := q.Get("tail"); t != "" {
		v, err := strconv.Atoi(t)
		if err != nil || v < 1 {
			http.Error(w, "tail must be a positive whole number", http.StatusBadRequest)
			return
		}
		n = min(v, maxTail)
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "html" {
		http.Error(w, "format must be json or html", http.StatusBadRequest)
		return
	}
	b, ok := s.find(r.PathValue("id"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	lines, err := s.tail(r.Context(), b, n)
	if err != nil && len(lines) == 0 {
		http.Error(w, "cannot read the journal", http.StatusInternalServerError)
		return
	}
	g := processGuard()
	g.runtime = s.secrets
	for i := range lines {
		lines[i].Raw = g.line(lines[i].Raw)
	}
	if format == "html" {
		serveJournalPage(w, b, lines)
		return
	}
	var body bytes.Buffer
	for _, l := range lines {
		body.Write(l.Raw)
		body.WriteByte('\n')
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(body.Bytes())
}

// lifeDeadline bounds reading a being's commit record for a route.
const lifeDeadline = 5 * time.Second

// newSeries is the balance series of b, read from its journal files or
// fed from its committed events (update).
func (s *beings) newSeries(b journalview.Being) *journalview.Series {
	if s.life != nil {
		return journalview.NewSeriesOf(b, seriesPoints)
	}
	return journalview.NewSeries(b, seriesPoints)
}

// update brings b's series up to date: from its journal files, or with
// its committed events past those it has taken (a committed event stays
// committed, so the series only grows).
func (s *beings) update(ctx context.Context, b journalview.Being, series *journalview.Series) ([]journalview.Point, error) {
	if s.life == nil {
		return series.Update()
	}
	lines, err := s.committed(ctx, b, series.Seq(), -1)
	return series.Add(lines), err
}

// tail is b's newest n journal lines: from its journal files, or its
// newest n committed events.
func (s *beings) tail(ctx context.Context, b journalview.Being, n int) ([]journalview.Line, error) {
	if s.life == nil {
		return journalview.Tail(b.Dir, n)
	}
	return s.committed(ctx, b, 0, n)
}

// committed is b's committed events past seq after, the newest n of them
// when n is not negative, as lines.
func (s *beings) committed(ctx context.Context, b journalview.Being, after uint64, n int) ([]journalview.Line, error) {
	ctx, cancel := context.WithTimeout(ctx, lifeDeadline)
	defer cancel()
	events, err := s.life(ctx, b.Dir, after, n)
	if err != nil {
		return nil, err
	}
	lines := make([]journalview.Line, 0, len(events))
	for _, e := range events {
		l, err := journalview.LineOf(e)
		if err != nil {
			return lines, err
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// line returns a journal line as it may be served: unchanged when the
// guard finds nothing to redact, else re-encoded with the redactions.
func (g *guard) line(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return []byte(`{"type":"(unreadable)"}`)
	}
	before, _ := json.Marshal(v)
	clean := map[string]any{}
	for k, e := range v {
		if keyAllowed(k) {
			clean[k] = g.value(e)
		}
	}
	after, _ := json.Marshal(clean)
	if bytes.Equal(before, after) {
		return raw
	}
	return after
}

// journalPage is the HTML view of a journal tail: one row per event,
// everything escaped by html/template.
var journalPage = template.Must(template.New("journal").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>singularity: journal of {{.Name}}</title>
<style>
body { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; margin: 1em; color: #222; background: #fafafa; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
td { padding: 1px 6px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; border-bottom: 1px solid #eee; }
td.seq { width: 5em; color: #999; text-align: right; }
td.at { width: 15em; color: #666; }
td.type { width: 11em; font-weight: bold; color: #0b5394; }
a { color: #0b5394; }
</style>
</head>
<body>
<h1>Journal of {{.Name}} <small>(last {{len .Rows}} events; <a href="journal?tail={{.Tail}}">JSON lines</a>, <a href="../../">actor tree</a>)</small></h1>
<table>
{{range .Rows}}<tr><td class="seq">{{.Seq}}</td><td class="at">{{.At}}</td><td class="type">{{.Type}}</td><td title="{{.Fields}}">{{.Fields}}</td></tr>
{{end}}</table>
</body>
</html>
`))

// journalCSP allows the journal page's inline style only.
var journalCSP = func() string {
	var b bytes.Buffer
	_ = journalPage.Execute(&b, journalData{})
	return "default-src 'none'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; style-src" +
		hashesOf(styleRE, b.Bytes())
}()

type journalRow struct{ Seq, At, Type, Fields string }

type journalData struct {
	Name string
	Tail int
	Rows []journalRow
}

func serveJournalPage(w http.ResponseWriter, b journalview.Being, lines []journalview.Line) {
	data := journalData{Name: b.Name, Tail: len(lines)}
	for i := len(lines) - 1; i >= 0; i-- { // newest first
		l := lines[i]
		data.Rows = append(data.Rows, journalRow{
			Seq: strconv.FormatUint(l.Head.Seq, 10), At: l.Head.At.UTC().Format(journalview.TimeLayout),
			Type: l.Head.Type, Fields: journalview.Fields(l),
		})
	}
	var body bytes.Buffer
	if err := journalPage.Execute(&body, data); err != nil {
		http.Error(w, "cannot render the journal", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", journalCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(body.Bytes())
}
