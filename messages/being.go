package messages

import (
	"fmt"

	"github.com/wisent/singularity/internal/store/money"
)

// StopBeing asks a being to shut down gracefully: it stops at its next
// round boundary, stops its own children first, stops its Las, saves its
// final status and answers its parent with BeingStopped. Now skips the
// waiting (a second Ctrl-C) but still saves.
type StopBeing struct {
	Now bool
	// Subtree stops the being for good in a family spread over members
	// (a being.Placement whose children run elsewhere): its children, wherever they run, stop
	// before it (SubtreeStopping), as when it ends by itself.
	Subtree bool
}

func (s StopBeing) String() string { return fmt.Sprintf("StopBeing{now=%t}", s.Now) }

// BeingStopped tells a parent that one of its beings has finished its
// shutdown with the given final status ("stopped", "exhausted", "failed").
// Err is the failure that ended a failed being, if any.
type BeingStopped struct {
	ID     string
	Name   string
	Status string
	Err    error
	// Held and Earned are what the stopped being and its stopped
	// descendants account for of the family's money (remaining + spent +
	// in transit, and earned): the parent keeps showing them in the
	// family ledger (docs/money.md#the-family-ledger).
	Held   money.Amount
	Earned money.Amount
	// Funded is what came into them from outside the family
	// (docs/money.md#funding), which the family ledger adds to its
	// sources.
	Funded money.Amount
	// Fenced says the being stopped because its fence refused a step
	// (docs/cluster.md#a-fenced-being): it wrote nothing more, and its
	// next holder, on this member or another, goes on from what it
	// committed. Err says why.
	Fenced bool
}

func (s BeingStopped) String() string {
	return fmt.Sprintf("BeingStopped{%s %s}", s.Name, s.Status)
}

// CycleReport is the outcome of one cycle (docs/cycle.md#the-cycle-report),
// sent by the root being to its parent after each cycle of `once`. Err is the
// first error of the cycle, returned by `once` after state and journal are
// durable.
type CycleReport struct {
	Cycle        uint64
	Status       string // completed | tool_round_limit | budget_exhausted
	FinalContent *string
	Balance      money.Amount
	Earned       money.Amount
	NetProfit    money.Amount
	TotalTokens  uint64
	Actions      []string
	Err          error
}

func (r CycleReport) String() string {
	return fmt.Sprintf("CycleReport{cycle=%d status=%s}", r.Cycle, r.Status)
}

// InjectPanic makes a being actor panic when it is received, only if
// the being was started with fault injection enabled. Tests use it to
// prove a crashed child is restarted from its saved state.
type InjectPanic struct{}

// BeingReleased is what a family spread over members reports of a being
// it ran once the being's actor has ended (docs/cluster.md#placement):
// Dir is its state directory, Status its final status, Err the failure
// that ended it, if any. The member lets the being's lock go (recording
// an ended being's end first).
type BeingReleased struct {
	Dir    string
	Status string
	Err    error
}

func (s BeingReleased) String() string { return "BeingReleased{" + s.Dir + " " + s.Status + "}" }

// BeingStarted tells a being's parent that the being has booted: its
// Las is up and its boot step durable (or, dormant, it has loaded). Dir
// is its state directory. A member activating a takeover starts the
// next beings once the first have (docs/cluster.md#beings-spread-over-members).
type BeingStarted struct {
	Dir string
}

func (s BeingStarted) String() string { return "BeingStarted{" + s.Dir + "}" }

// SubtreeStopping is what a being of a family spread over members tells
// its family when it stops for good with children on record: its member
// has every child stop for good, wherever it runs, and answers
// SubtreeStopped once each has ended (docs/cluster.md#beings-spread-over-members). Dir is
// the being's state directory.
type SubtreeStopping struct {
	Dir string
}

// SubtreeStopped tells a being that every child of its SubtreeStopping
// has ended.
type SubtreeStopped struct{}

// ShutdownFamily asks the family to stop every being, children first,
// then the gateway. Now skips the waiting (a second Ctrl-C).
type ShutdownFamily struct {
	Now bool
}

func (s ShutdownFamily) String() string { return fmt.Sprintf("ShutdownFamily{now=%t}", s.Now) }

// FamilyStopped is the family's last word: the root being's final
// status and, when it failed, why.
type FamilyStopped struct {
	Status string
	Err    error
}

func (s FamilyStopped) String() string { return "FamilyStopped{" + s.Status + "}" }
