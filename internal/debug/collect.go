// Package debug is the read-only debug endpoint of docs/debug.md#routes: it
// collects the live actor tree by asking every actor to describe itself
// (describe.Request) and serves it as JSON, as indented text and as a
// self-refreshing HTML page; it serves each being's journal tail and balance
// series from the state directories (read, never written) and the family's
// metrics; all on a loopback address unless remote access is allowed
// explicitly.
//
// The endpoint serves only what actors put in their Description and what
// the journals hold, and screens both again on the way out (see the
// redaction rules on Collect).
// Collection is bounded by one deadline for the whole tree: an actor that
// does not answer in time, or is gone, is shown as "unresponsive" instead
// of hanging the request. The command owns a Server and mounts Handler;
// between requests a Handler keeps only where each being's directory is
// and its balance series so far.
package debug

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/debug/describe"
)

// DefaultDeadline is the collection deadline used when none is given.
const DefaultDeadline = time.Second

// maxDepth bounds the tree so that a describing bug (an actor listing an
// ancestor as its child) cannot recurse forever.
const maxDepth = 64

// StatusRepeated is the status of a node whose pid already appears
// elsewhere in the tree (an actor listed twice, or a cycle); it is not
// asked again and has no children.
const StatusRepeated = "repeated"

// Requester is what Collect needs to ask actors: an *actor.RootContext
// (system.Root) or any other actor.SenderContext. Collect blocks until
// the tree is complete, so call it from an HTTP handler or another plain
// goroutine, never from inside an actor's Receive: an actor waiting on
// its own description would only time out.
type Requester interface {
	RequestFuture(pid *actor.PID, message interface{}, timeout time.Duration) *actor.Future
}

var _ Requester = (*actor.RootContext)(nil)
var _ Requester = (actor.SenderContext)(nil)

// Collect walks the live actor tree from pid: it asks each actor for its
// describe.Description and then, concurrently, each of the children the
// description lists, keeping the listed order. deadline bounds the whole
// walk (not each ask); ctx may end it sooner. An actor that does not
// answer before the deadline, is stopped, or answers with something other
// than a Description becomes a node with status "unresponsive", its pid
// and no children; kind and name are unknown then and left empty.
// Non-positive deadlines mean DefaultDeadline.
//
// Everything an actor reports is redacted before it reaches the Node: figure
// keys (at any depth) that break the output boundary's key rules of
// docs/tools.md#the-output-boundary are dropped, and text (names, statuses,
// figure strings) that breaks its string rules or contains the value of a
// secret-named environment variable is replaced by "(redacted)".
func Collect(ctx context.Context, root Requester, pid *actor.PID, deadline time.Duration) Node {
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	c := &collector{root: root, guard: processGuard(), seen: map[string]bool{}}
	return c.node(ctx, pid, 0)
}

// collector holds one walk's shared state.
type collector struct {
	root  Requester
	guard *guard

	mu   sync.Mutex
	seen map[string]bool // pids already placed in the tree
}

// node describes pid and, recursively, its children.
func (c *collector) node(ctx context.Context, pid *actor.PID, depth int) Node {
	n := Node{PID: pidText(pid), Status: StatusUnresponsive, Children: []Node{}}
	if pid == nil {
		return n
	}
	if !c.claim(pid) {
		n.Status = StatusRepeated
		return n
	}
	d, ok := c.ask(ctx, pid)
	if !ok {
		return n
	}
	n.Kind = c.guard.text(d.Kind)
	n.Name = c.guard.text(d.Name)
	n.Status = c.guard.text(d.Status)
	n.Figures = c.guard.figures(d.Figures)
	if depth+1 >= maxDepth || len(d.Children) == 0 {
		return n
	}
	n.Children = make([]Node, len(d.Children))
	var wg sync.WaitGroup
	for i, child := range d.Children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Children[i] = c.node(ctx, child, depth+1)
		}()
	}
	wg.Wait()
	return n
}

// claim records pid as placed and reports whether it was new.
func (c *collector) claim(pid *actor.PID) bool {
	key := pid.Address + "/" + pid.Id // pid.String() formats the whole message
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[key] {
		return false
	}
	c.seen[key] = true
	return true
}

// ask sends one DescribeRequest with the time left before ctx's deadline.
func (c *collector) ask(ctx context.Context, pid *actor.PID) (describe.Description, bool) {
	if ctx.Err() != nil {
		return describe.Description{}, false
	}
	left := time.Until(deadlineOf(ctx))
	if left <= 0 {
		return describe.Description{}, false
	}
	res, err := c.root.RequestFuture(pid, describe.Request{}, left).Result()
	if err != nil {
		return describe.Description{}, false
	}
	switch d := res.(type) {
	case describe.Description:
		return d, true
	case *describe.Description:
		if d != nil {
			return *d, true
		}
	}
	return describe.Description{}, false
}

// deadlineOf returns ctx's deadline; Collect always sets one.
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// pidText is the pid as shown in the tree: its id, which reads as a path
// for actors spawned with stable names.
func pidText(pid *actor.PID) string {
	if pid == nil {
		return ""
	}
	return pid.Id
}
