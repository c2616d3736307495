package debug

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/tools/boundary"
)

// HandlerConfig says where the tree starts and how long collecting it may
// take.
type HandlerConfig struct {
	// Root asks the actors; normally the actor system's root context
	// (system.Root). Required unless Elsewhere is set.
	Root Requester
	// PID is the root of the tree served, normally the family actor.
	// Required unless Elsewhere is set.
	PID *actor.PID
	// Deadline bounds one collection of the whole tree. Zero means
	// DefaultDeadline.
	Deadline time.Duration
	// Metrics serves GET /metrics (normally metrics.Metrics.Handler);
	// nil answers 404.
	Metrics http.Handler
	// StateDir is the root being's state directory, read (never
	// written) for the per-being journal and balance routes; empty
	// answers 404 there.
	StateDir string
	// Committed, for a family across processes, reads a being's
	// committed events (member.Holding.Committed): the journal and
	// balance routes then show only what its commit record says was
	// committed. Nil reads each being's journal files as one process
	// wrote them.
	Committed Committed
	// Member names the member of a family across processes this
	// process is: every being of the collected tree is labelled with it
	// (the figure "member"). Empty for a single process.
	Member string
	// Elsewhere, when set, is where the tree comes from instead of Root
	// and PID: a member that does not hold its family asks the member
	// that does. Its error is served as 503 with the error's sentence.
	Elsewhere func(ctx context.Context) (Node, error)
	// Secrets are the runtime's secret values: a text of the tree or a
	// journal line that holds one, in any of its forms, is served as
	// Redacted (docs/debug.md#redaction). Nil adds none to the guard's.
	Secrets *boundary.Secrets
}

//go:embed page.html
var page []byte

// pageCSP allows exactly the page's own inline script and style and
// fetches from the same origin; nothing external can load.
var pageCSP = contentSecurityPolicy(page)

// Handler serves the read-only debug routes of docs/debug.md#routes:
//
//	GET /debug/actors              the tree as JSON (see Node)
//	GET /debug/actors?format=text  the tree as indented text (Node.WriteText)
//	GET /debug/                    a self-contained HTML page, a card per
//	                               being then the tree, drawn by the server
//	                               (?page=N of a large family); its script
//	                               fetches it again every two seconds
//	GET /debug/beings/{id}/journal the being's journal tail (?tail=N,
//	                               &format=html for a table page)
//	GET /debug/beings/{id}/balance its balance over its life (sparkline)
//	GET /metrics                   the Prometheus metrics
//	GET /healthz                   "ok"
//
// HEAD is accepted wherever GET is; any other method gets 405 with an
// Allow header, and unknown paths 404. Every response is marked no-store.
func Handler(cfg HandlerConfig) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/actors", func(w http.ResponseWriter, r *http.Request) {
		serveActors(w, r, cfg)
	})
	b := newBeings(cfg.StateDir, cfg.Committed, cfg.Secrets)
	mux.HandleFunc("GET /debug/{$}", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, r, cfg, b)
	})
	mux.HandleFunc("GET /debug/beings/{id}/journal", b.serveJournal)
	mux.HandleFunc("GET /debug/beings/{id}/balance", b.serveBalance)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

func serveActors(w http.ResponseWriter, r *http.Request, cfg HandlerConfig) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "text" {
		http.Error(w, "format must be json or text", http.StatusBadRequest)
		return
	}
	tree, err := TreeOf(r.Context(), cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var body bytes.Buffer
	if format == "text" {
		_ = tree.WriteText(&body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		raw, err := tree.MarshalJSON()
		if err != nil {
			// Figures are plain JSON values after redaction, so this
			// cannot happen; answer without details all the same.
			http.Error(w, "cannot encode the actor tree", http.StatusInternalServerError)
			return
		}
		body.Write(raw)
		body.WriteByte('\n')
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(body.Bytes())
}

// servePage serves the page with the family drawn in it (renderPage),
// to a browser and to the page's own script alike: ?page=N (1-based)
// picks the page of a large family.
func servePage(w http.ResponseWriter, r *http.Request, cfg HandlerConfig, b *beings) {
	pageNo := 0
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			http.Error(w, "page must be a number from 1", http.StatusBadRequest)
			return
		}
		pageNo = n - 1
	}
	tree, err := TreeOf(r.Context(), cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	body := renderPage(tree, pageNo, time.Now(), func(id string) []string { return b.balances(r.Context(), id) })
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(body)
}

var (
	scriptRE = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	styleRE  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
)

// contentSecurityPolicy pins the page's inline script and style by hash.
func contentSecurityPolicy(html []byte) string {
	return "default-src 'none'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none';" +
		" script-src" + hashesOf(scriptRE, html) + "; style-src" + hashesOf(styleRE, html)
}

// hashesOf lists the CSP hash sources of every block re finds in html.
func hashesOf(re *regexp.Regexp, html []byte) string {
	var s string
	for _, m := range re.FindAllSubmatch(html, -1) {
		sum := sha256.Sum256(m[1])
		s += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return s
}
