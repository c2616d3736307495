// Package messages holds the types actors exchange: plain structs, asks
// named XRequest/XResponse, events in the past tense. No behaviour lives
// here beyond String().
package messages

import "github.com/asynkron/protoactor-go/actor"

// DescribeRequest asks any actor to describe itself for the debug
// endpoint. Every actor answers with a Description.
type DescribeRequest struct{}

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
	// Descendants, when set, lists actors anywhere below this one that a
	// collector may ask at once rather than level by level (the family
	// lists every being and ledger it knows of). It is only a hint: the
	// tree is built from Children.
	Descendants []*actor.PID `json:"-"`
}

// ActorsUp tells the family that actors below it have started, so that
// its description can list them as descendants (a being sends it for
// itself and its ledger when it starts).
type ActorsUp struct{ PIDs []*actor.PID }

// ActorsDown tells the family that those actors have stopped.
type ActorsDown struct{ PIDs []*actor.PID }
