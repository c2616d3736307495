// Package describe holds the two messages of the debug endpoint's walk over
// the actor tree: the Request every actor answers and the Description it
// answers with. It sits below both messages (which names them
// messages.DescribeRequest and messages.Description) and internal/debug
// (which asks them), so the debug endpoint needs no message package above it.
package describe

import "github.com/asynkron/protoactor-go/actor"

// Request asks any actor to describe itself for the debug endpoint. Every
// actor answers with a Description.
type Request struct{}

// Description is one actor's own view of itself: its kind ("family", "brama",
// "being", "ledger", "las"), its name, its status and the kind-specific
// figures of docs/debug.md#figures. Children are filled in by whoever
// assembles the tree, by asking each child in turn. Figures must never hold a
// secret, an environment value or a secret's path.
type Description struct {
	Kind     string         `json:"kind"`
	Name     string         `json:"name"`
	Status   string         `json:"status"`
	Figures  map[string]any `json:"figures,omitempty"`
	Children []*actor.PID   `json:"-"` // the children to ask next, in display order
}
