package main

import (
	"context"
	"strings"
	"sync"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/supervision/fault"
)

// serverCheck is one MCP server of a servers file as `doctor` found it:
// the tools it listed, or why it failed.
type serverCheck struct {
	Name  string `json:"name"`
	Tools int    `json:"tools"`
	// Error is empty when the server listed at least one tool; else the
	// failure of its last incarnation (or "lists no tool") and, after
	// "; stderr: ", the last line it wrote there (of npm's failure
	// report, its summary).
	Error string `json:"error,omitempty"`
}

// npmReport starts npm's report of a failure, a block of "npm error"
// lines whose code comes first and whose summary follows it ("npm error
// 404 Not Found - GET …"); its last line only points at npm's log.
const (
	npmReport = "npm error code "
	npmLine   = "npm error "
)

// lastWords keeps what a server said last: its last stderr line (of
// npm's failure report, the summary) and its last failure.
type lastWords struct {
	mu              sync.Mutex
	stderr, failure string
	// inNPM is true within npm's report, summarised when the summary
	// has been taken.
	inNPM, summarised bool
}

func (w *lastWords) line(s string) {
	if s = strings.TrimSpace(s); s == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case strings.HasPrefix(s, npmReport):
		w.inNPM, w.summarised, w.stderr = true, false, s
	case w.inNPM && strings.HasPrefix(s, npmLine):
		if !w.summarised {
			w.summarised, w.stderr = true, s
		}
	default:
		w.inNPM, w.stderr = false, s
	}
}

func (w *lastWords) failed(reason string) {
	w.mu.Lock()
	w.failure = strings.TrimPrefix(reason, fault.ClassMCP.Prefix()+": ")
	w.mu.Unlock()
}

// reason is why the server listed no tool, err being the listing's own
// failure (nil when it ended with an empty catalogue).
func (w *lastWords) reason(err error) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	switch {
	case err != nil:
		parts = append(parts, strings.TrimPrefix(fault.Line(err), fault.ClassMCP.Prefix()+": "))
	case w.failure != "":
		parts = append(parts, w.failure)
	default:
		parts = append(parts, "lists no tool")
	}
	if w.stderr != "" {
		parts = append(parts, "stderr: "+w.stderr)
	}
	return strings.Join(parts, "; ")
}

// checkServers starts each server of opts that LAS_ONLY and LAS_SKIP
// select on its own, all at once, as
// `run` starts it (supervised, restarted under its intensity, within the
// boot wait), and reports each in file order.
func checkServers(ctx context.Context, opts las.Options) []serverCheck {
	servers := opts.Selected()
	opts.Only, opts.Skip = nil, nil
	checks := make([]serverCheck, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			words := &lastWords{}
			one := opts
			one.Servers, one.RequiredSurfaces = []las.Server{srv}, nil
			one.OnStderr, one.OnFailure = words.line, words.failed
			tools, err := las.ListTools(ctx, one)
			checks[i] = serverCheck{Name: srv.Name, Tools: len(tools)}
			if err != nil || len(tools) == 0 {
				checks[i].Error = words.reason(err)
			}
		}()
	}
	wg.Wait()
	return checks
}

// serversVerdict is doctor's verdict on the servers: the first in file
// order that failed or listed no tool, as "mcp: server <name>: <reason>"
// (exit 3); else the first required surface that is no server's.
func serversVerdict(checks []serverCheck, required []string) error {
	names := map[string]bool{}
	for _, c := range checks {
		if c.Error != "" {
			return fault.Upstream(fault.ClassMCP, fault.Permanent, "server %s: %s", c.Name, c.Error)
		}
		names[c.Name] = true
	}
	for _, s := range required {
		if !names[s] {
			return fault.Upstream(fault.ClassMCP, fault.Permanent, "required Las surface unavailable: %s", s)
		}
	}
	return nil
}
