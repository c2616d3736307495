package supervision

import (
	"github.com/asynkron/protoactor-go/actor"
)

// ChildBeingPrefix starts the actor name of every child being
// ("being-<name>-<id>"), which is how a parent's strategy tells them from
// its Las and ledger.
const ChildBeingPrefix = "being-"

// ChildBeingConfig tunes how a parent restarts a crashed child being.
// Zero fields take the SPEC §9.6 defaults (100 ms doubling to 10 s with
// jitter, 5 restarts within 60 s).
type ChildBeingConfig struct {
	Backoff   Backoff
	Intensity Intensity
	Notify    func(system *actor.ActorSystem, ev Event)
}

// ChildBeingPolicy restarts a child being that panicked (SPEC §15): the
// new incarnation reloads its saved state, so a crash loses at most the
// round in flight. Past the intensity the child is stopped; only that
// child: its siblings and its parent live on.
func ChildBeingPolicy(cfg ChildBeingConfig) Policy {
	return Policy{
		Name:      "child-being",
		Decider:   func(any) actor.Directive { return actor.RestartDirective },
		Backoff:   cfg.Backoff,
		Intensity: cfg.Intensity,
		Notify:    cfg.Notify,
	}
}

// BeingChildrenConfig tunes the strategy a being applies to its children.
type BeingChildrenConfig struct {
	Las   LasConfig
	Child ChildBeingConfig
}

// ForBeingChildren is the supervisor strategy of a being (SPEC §2): its
// Las child is restarted by LasPolicy, its child beings by
// ChildBeingPolicy, and a failure of anything else (the ledger) is
// escalated, so the being itself is restarted by its own parent.
func ForBeingChildren(cfg BeingChildrenConfig) *Strategy {
	return NewStrategy([]Route{
		LasRoute(cfg.Las),
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
