package supervision

import (
	"github.com/asynkron/protoactor-go/actor"
)

// ChildBeingPrefix starts the actor name of every child being
// ("being-<name>-<id>"), which is how a parent's strategy tells them from
// its Las and ledger.
const ChildBeingPrefix = "being-"

// ChildBeingConfig tunes how a parent restarts a crashed child being.
// Zero fields take the defaults of docs/las.md#restart-backoff-and-intensity
// (100 ms doubling to 10 s with jitter, 5 restarts within 60 s).
type ChildBeingConfig struct {
	Backoff   Backoff
	Intensity Intensity
	Notify    func(system *actor.ActorSystem, ev Event) // hears every decision (logs, tests)
}

// ChildBeingPolicy restarts a child being that panicked
// (docs/family.md#supervision-of-child-beings): the new incarnation
// reloads its saved state, so a crash loses at most the step in flight.
// Past the intensity the child is stopped; only that child: its siblings
// and its parent live on.
func ChildBeingPolicy(cfg ChildBeingConfig) Policy {
	return Policy{
		Name:      "child-being",
		Decider:   func(any) actor.Directive { return actor.RestartDirective },
		Backoff:   cfg.Backoff,
		Intensity: cfg.Intensity,
		Notify:    cfg.Notify,
	}
}

// LedgerChildName is the actor name of a being's ledger child.
const LedgerChildName = "ledger"

// LedgerConfig tunes the ledger policy.
type LedgerConfig struct {
	// Notify, when set, hears every decision (always Escalated).
	Notify func(system *actor.ActorSystem, ev Event)
}

// LedgerPolicy escalates every failure of a being's ledger, never
// restarting it: the ledger is the being's money as a node of the tree,
// and the being owns that money, so a failure of the ledger is the
// being's. Escalating makes the being's own parent restart the being,
// which reloads its money from the saved state and the journal and
// respawns its ledger.
func LedgerPolicy(cfg LedgerConfig) Policy {
	return Policy{
		Name:    "ledger",
		Decider: func(any) actor.Directive { return actor.EscalateDirective },
		Notify:  cfg.Notify,
	}
}

// BeingChildrenConfig tunes the strategy a being applies to its children.
type BeingChildrenConfig struct {
	Las    LasConfig
	Child  ChildBeingConfig
	Ledger LedgerConfig
}

// ForBeingChildren is the supervisor strategy of a being
// (docs/concepts.md#the-actor-tree), one route per kind of child:
//
//	las (LasChildName)          LasPolicy: restart, stop if permanent
//	ledger (LedgerChildName)    LedgerPolicy: escalate (the being restarts)
//	being-… (ChildBeingPrefix)  ChildBeingPolicy: restart from saved state
//
// A failure of any other child is escalated too (Strategy's rule for a
// child no route matches).
func ForBeingChildren(cfg BeingChildrenConfig) *Strategy {
	return NewStrategy([]Route{
		LasRoute(cfg.Las),
		{Match: ChildNamed(LedgerChildName), Policy: LedgerPolicy(cfg.Ledger)},
		{Match: ChildPrefixed(ChildBeingPrefix), Policy: ChildBeingPolicy(cfg.Child)},
	}, cfg.Las.options()...)
}

// StopOnFailure is the family's strategy: a failing gateway or root being
// is stopped, not restarted, and the family ends with an error the
// operator sees.
func StopOnFailure() actor.SupervisorStrategy { return stopStrategy{} }

type stopStrategy struct{}

func (stopStrategy) HandleFailure(system *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, _ any, _ any) {
	supervisor.StopChildren(child)
}
