// Package messages holds the types actors exchange: plain structs, asks
// named XRequest/XResponse, events in the past tense. No behaviour lives
// here beyond String().
package messages

import "github.com/wisent/singularity/internal/debug/describe"

// DescribeRequest asks any actor to describe itself for the debug
// endpoint. Every actor answers with a Description. It is the debug
// endpoint's own type (package internal/debug/describe), named here with
// the other messages.
type DescribeRequest = describe.Request

// Description is one actor's own view of itself: its kind ("family", "brama",
// "being", "ledger", "las"), its name, its status and the kind-specific
// figures of docs/debug.md#figures. Children are filled in by whoever
// assembles the tree, by asking each child in turn. Figures must never hold a
// secret, an environment value or a secret's path. It is the debug
// endpoint's own type (package internal/debug/describe).
type Description = describe.Description
