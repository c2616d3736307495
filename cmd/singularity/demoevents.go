package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/outcome"
)

// demoEvents prints one line per notable event of the family as it
// happens (docs/demo.md#what-it-prints): a child spawned (with its
// endowment), revenue earned, a workspace file written, a model
// switched. Money is rounded for reading. It is an observe.Observer; the
// lines are written whole under a lock, as beings report concurrently.
type demoEvents struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	// minted is what a child gets when no endowment was journaled (the
	// configured starting balance).
	minted money.Amount
	// granted holds a being's last endowment_granted amount until its
	// child_added.
	granted map[string]money.Amount
}

var _ observe.Observer = (*demoEvents)(nil)

func newDemoEvents(w io.Writer, minted money.Amount) *demoEvents {
	return &demoEvents{w: w, now: time.Now, minted: minted, granted: map[string]money.Amount{}}
}

func (d *demoEvents) Step(s observe.Step) {
	for i := range s.Events {
		e := &s.Events[i]
		switch e.Type {
		case observe.EventEndowmentGranted:
			d.mu.Lock()
			d.granted[s.Being.ID] = e.Amount
			d.mu.Unlock()
		case state.EventChildAdded:
			if e.Child == nil {
				continue
			}
			d.mu.Lock()
			endowment, ok := d.granted[s.Being.ID]
			delete(d.granted, s.Being.ID)
			d.mu.Unlock()
			how := "an endowment of " + endowment.Human() + " USD"
			if !ok {
				how = "a starting balance of " + d.minted.Human() + " USD"
			}
			d.line("%s spawned child %s with %s", s.Being.Name, e.Child.Name, how)
		case state.EventRevenueCredited:
			d.line("%s earned %s USD (%s)", s.Being.Name, e.Amount.Human(), e.Source)
		case state.EventModelSwitched:
			d.line("%s switched model to %s", s.Being.Name, e.Model)
		case state.EventToolFinished:
			if e.Tool == builtin.FileWrite && e.Status == outcome.Success {
				d.line("%s wrote workspace file %s", s.Being.Name, writtenPath(e))
			}
		}
	}
}

// writtenPath is the workspace-relative path a file write reports.
func writtenPath(e *state.Event) string {
	if e.Chat == nil {
		return "(unknown)"
	}
	var env struct {
		Content struct {
			Path  string `json:"path"`
			Bytes int    `json:"bytes"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(e.Chat.Content), &env) != nil || env.Content.Path == "" {
		return "(unknown)"
	}
	return fmt.Sprintf("%s (%d bytes)", env.Content.Path, env.Content.Bytes)
}

func (d *demoEvents) line(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.w, "  %s %s\n", d.now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

func (*demoEvents) CycleEnded(observe.Being, uint64, string) {}
func (*demoEvents) LasStarted(observe.Being, string)         {}
func (*demoEvents) LasRestarted(observe.Being, string)       {}
func (*demoEvents) DurableWrite(time.Duration)               {}
