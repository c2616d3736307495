// Package debugtest spawns small real actor trees for tests of the debug
// endpoint: each actor answers messages.DescribeRequest with a fixed
// description listing its real child actors, or (when silent) never
// answers at all.
package debugtest

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/testkit"
)

// Spec describes one actor of a test tree and its children.
type Spec struct {
	// ID is the actor's name under its parent (SpawnNamed), so the pid
	// reads as a path such as "family/being-ada/las".
	ID string
	// Description is what the actor answers; its Children are filled in
	// with the pids of the spawned children, in order.
	Description messages.Description
	// Silent actors ignore DescribeRequest, like a stuck actor.
	Silent   bool
	Children []Spec
}

// Describer is a test actor answering DescribeRequest with a fixed
// description. It spawns the children of its Spec when it starts.
type Describer struct {
	spec Spec
	desc messages.Description
}

var _ actor.Actor = (*Describer)(nil)

// Props returns the props of an actor described by spec.
func Props(spec Spec) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &Describer{spec: spec} })
}

// Receive spawns children on start and answers describe requests unless
// silent.
func (d *Describer) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		d.handleStarted(ctx)
	case messages.DescribeRequest:
		if !d.spec.Silent {
			ctx.Respond(d.desc)
		}
	}
}

func (d *Describer) handleStarted(ctx actor.Context) {
	d.desc = d.spec.Description
	d.desc.Children = nil
	for _, c := range d.spec.Children {
		pid, err := ctx.SpawnNamed(Props(c), c.ID)
		if err != nil {
			panic(err)
		}
		d.desc.Children = append(d.desc.Children, pid)
	}
}

// Spawn starts the tree under the system's root and returns the pid of
// its top actor.
func Spawn(system *actor.ActorSystem, spec Spec) (*actor.PID, error) {
	return system.Root.SpawnNamed(Props(spec), spec.ID)
}

// PID returns the pid of the actor with the given path id in system,
// such as "family/being-ada/las".
func PID(system *actor.ActorSystem, id string) *actor.PID {
	return actor.NewPID(system.Address(), id)
}

// Family is the reference tree of docs/concepts.md#the-actor-tree: family →
// brama, being "Ada" → ledger, las, being "Bo" → ledger, las.
func Family() Spec {
	return Spec{
		ID:          "family",
		Description: messages.Description{Kind: "family", Name: "family", Status: "running"},
		Children: []Spec{
			{
				ID: "brama",
				Description: messages.Description{Kind: "brama", Name: "brama", Status: "running", Figures: map[string]any{
					"in_flight": 1,
					"completed": 42,
					"errors":    map[string]int{"permanent": 0, "transient": 2, "indeterminate": 1},
				}},
			},
			being("being-ada", "Ada", 3, "9.75", "0.25", "finance__finance_propose", 4242,
				being("being-bo", "Bo", 1, "10", "0", "", 4343)),
		},
	}
}

// being is a being with its ledger, its las and the given child beings.
func being(id, name string, cycle int, balance, earned, lastAction string, pid int, kids ...Spec) Spec {
	bal := testkit.USD(balance)
	start := testkit.USD("10")
	spent := start.Add(testkit.USD(earned)).Sub(bal)
	children := []Spec{
		{
			ID: "ledger",
			Description: messages.Description{Kind: "ledger", Name: "ledger", Status: "running", Figures: map[string]any{
				"remaining": bal, "spent": spent, "earned": testkit.USD(earned),
			}},
		},
		{
			ID: "las",
			Description: messages.Description{Kind: "las", Name: "las", Status: "running", Figures: map[string]any{
				"process_id": pid, "tool_count": 12, "restarts": 1, "last_restart_reason": "exit status 1",
			}},
		},
	}
	return Spec{
		ID: id,
		Description: messages.Description{Kind: "being", Name: name, Status: "running", Figures: map[string]any{
			"cycle": cycle, "balance": bal, "earned": testkit.USD(earned),
			"current_model": "test-model", "last_action": lastAction,
		}},
		Children: append(children, kids...),
	}
}
