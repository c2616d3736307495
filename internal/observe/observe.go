// Package observe is the seam between a being and what watches it from
// outside the journal: the Prometheus metrics (internal/metrics), the
// narrative log (internal/logging) and the demo's event lines. A being
// reports only what is already durable — a journal step once it is
// written and applied — plus the few facts no event carries (how long a
// completion or a tool call took, how a cycle ended, a Las start or restart, how
// long a durable write took), so whatever an observer counts agrees with
// the journals exactly.
//
// Observers are called on the being's mailbox (DurableWrite on a writer
// goroutine): they must be quick and must not block; they must not keep
// the events' slices past the call. An Observer used by a family is shared
// by all of its beings and must be safe for concurrent use.
package observe

import (
	"strings"
	"time"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// Being names the being an observation is about.
type Being struct {
	Name string
	// ID is the being's own id: a child's is the id spawn_child gave it
	// (its directory name under children/), the root's is its agent id.
	ID string
	// AgentID is the family's agent id, which children inherit.
	AgentID string
}

// Label is the being as metrics name it (docs/debug.md#metrics):
// "<name>-<first 8 of id>".
func (b Being) Label() string {
	id := b.ID
	if len(id) > 8 {
		id = id[:8]
	}
	return b.Name + "-" + id
}

// Step is one journal step of a being, durable and applied.
type Step struct {
	Being Being
	// Events are the step's events as journaled (numbered, timed).
	Events []state.Event
	// Status and Balance are the being's status and remaining balance
	// after the step.
	Status  string
	Balance money.Amount
	// Tier is the being's survival tier after the step
	// (docs/money.md#survival-tiers), 0 for none.
	Tier int
	// Elapsed is how long the completion (a step with model_completed)
	// or the tool call (a step with tool_finished) took; zero for other
	// steps.
	Elapsed time.Duration
	// Finish is a completion's finish reason ("stop", "tool_calls",
	// "length", …); empty for other steps.
	Finish string
	// Model is the model a completion's step (model_completed and its
	// cost_debited) is billed at: the one the response names, else the
	// one asked for; empty for other steps.
	Model string
}

// Observer watches beings. See the package comment for the rules.
type Observer interface {
	// Step reports a durable, applied journal step.
	Step(s Step)
	// CycleEnded reports a cycle whose end is durable, with its report
	// status ("completed", "tool_round_limit", "budget_exhausted") or
	// "failed" when it ended on an error.
	CycleEnded(b Being, cycle uint64, status string)
	// LasStarted reports that the being started its MCP servers (its
	// Las actor), before any restart can be reported.
	LasStarted(b Being, server string)
	// LasRestarted reports a restart of one of the being's MCP servers.
	LasRestarted(b Being, server string)
	// DurableWrite reports how long one durable write (a journal step
	// or a checkpoint, each ending in fsync) took.
	DurableWrite(d time.Duration)
}

// Tee returns an Observer that passes every observation to each of obs
// in turn; nil entries are skipped. With no observer left it returns nil.
func Tee(obs ...Observer) Observer {
	var list tee
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type tee []Observer

func (t tee) Step(s Step) {
	for _, o := range t {
		o.Step(s)
	}
}

func (t tee) CycleEnded(b Being, cycle uint64, status string) {
	for _, o := range t {
		o.CycleEnded(b, cycle, status)
	}
}

func (t tee) LasStarted(b Being, server string) {
	for _, o := range t {
		o.LasStarted(b, server)
	}
}

func (t tee) LasRestarted(b Being, server string) {
	for _, o := range t {
		o.LasRestarted(b, server)
	}
}

func (t tee) DurableWrite(d time.Duration) {
	for _, o := range t {
		o.DurableWrite(d)
	}
}

// Surface is the surface a tool belongs to for metrics
// (docs/debug.md#metrics): the prefix before "__" of a Las tool, "most" for
// the Most tools, "builtin" for everything else.
func Surface(tool string) string {
	if prefix, _, ok := strings.Cut(tool, "__"); ok && prefix != "" {
		return prefix
	}
	if strings.HasPrefix(tool, "most_") {
		return "most"
	}
	return "builtin"
}

// EventEndowmentGranted is the parent's journal event of a funded child
// (docs/money.md, stage 2), counted as a grant wherever it appears.
const EventEndowmentGranted = "endowment_granted"
