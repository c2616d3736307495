package being

import "github.com/wisent/singularity/internal/durable"

// Placement is where a being runs, the one thing it knows of a family
// across machines (docs/cluster.md#placement): what it loads, the fence
// every step must pass, and whether its children run elsewhere. A being
// in one process has Alone, the zero value of Options.Placement.
type Placement interface {
	// Hold loads the being living in dir as its holder: what it loads
	// instead of dir's own state.json and journal (fence.Recover), and
	// the fence every step must pass before it counts
	// (docs/cluster.md#a-fenced-being). A nil Held means the being's own
	// files, unfenced.
	Hold(dir string) (*durable.Held, durable.Fence, error)
	// ChildrenElsewhere says the being's children are activated by
	// whichever member takes their lock, never started by the being: a
	// child is registered with the step that records it, a being that
	// loads as ended stops at once so that its member records its end,
	// a being that stops for good has its member stop its children
	// first, and a being whose Las does not start at boot fails its
	// start, writing nothing, for its member to try it again after a
	// wait (docs/cluster.md#beings-spread-over-members).
	ChildrenElsewhere() bool
}

// Alone is the placement of a being in one process: its own files,
// unfenced, its children started by it.
type Alone struct{}

// Hold loads nothing: the being reads its own files.
func (Alone) Hold(string) (*durable.Held, durable.Fence, error) { return nil, nil, nil }

// ChildrenElsewhere is false: the being starts its children.
func (Alone) ChildrenElsewhere() bool { return false }

// placement is o.Placement, Alone when unset.
func (o Options) placement() Placement {
	if o.Placement == nil {
		return Alone{}
	}
	return o.Placement
}
