package debug

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/store/state"
)

// FigureActor is the figure of a being whose actor is gone (its life
// ended, it exhausted its money or failed): "gone", its other figures
// read from its state.json (docs/debug.md#ended-beings).
const FigureActor = "actor"

// addGone puts back on the tree the beings of the family in root whose
// actors are gone, each under its parent's node, with the figures its
// state.json keeps: its status and the reason its life ended, its money,
// its cycle and its last action. So the page counts the beings
// `singularity status` counts. A directory whose state.json cannot be
// read (a child created right now) is left out; an empty root adds
// nothing.
func addGone(tree *Node, root string) {
	if root == "" {
		return
	}
	ids := map[string]*Node{}
	var index func(n *Node)
	var top *Node
	index = func(n *Node) {
		if n.Kind == "being" {
			if top == nil {
				top = n
			}
			if id, ok := n.Figures["id"].(string); ok {
				ids[id] = n
			}
		}
		for i := range n.Children {
			index(&n.Children[i])
		}
	}
	index(tree)
	if top == nil {
		return
	}
	// A parent's new children are appended after its living children
	// are walked, so no pointer into its children goes stale; every
	// being below a gone one is gone too.
	var walk func(dir string, parent *Node, depth int)
	walk = func(dir string, parent *Node, depth int) {
		var add []Node
		for _, e := range childDirs(dir, depth) {
			child := filepath.Join(dir, "children", e)
			if n, ok := ids[e]; ok {
				walk(child, n, depth+1)
				continue
			}
			n, ok := goneNode(child, e)
			if !ok {
				continue
			}
			walk(child, &n, depth+1)
			add = append(add, n)
		}
		parent.Children = append(parent.Children, add...)
	}
	walk(root, top, 1)
}

// childDirs lists the ids of the children/ directories of dir.
func childDirs(dir string, depth int) []string {
	if depth > maxGoneDepth {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, "children"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && journalview.ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// maxGoneDepth bounds the walk down children/ directories.
const maxGoneDepth = 64

// goneNodes remembers the nodes goneNode read, by state.json's path,
// with the file's size and modification time: a being whose actor is
// gone seldom changes, and its state.json may be large, so a page
// refreshed every two seconds reads it again only when it changed.
var goneNodes = struct {
	sync.Mutex
	m map[string]goneRead
}{m: map[string]goneRead{}}

// goneRead is one remembered read.
type goneRead struct {
	size int64
	mod  time.Time
	node Node
}

// maxGoneNodes bounds goneNodes; past it, it starts again empty.
const maxGoneNodes = 4096

// goneNode is the node of the being in dir, whose actor is gone, as its
// state.json describes it.
func goneNode(dir, id string) (Node, bool) {
	path := filepath.Join(dir, state.StateFile)
	info, err := os.Stat(path)
	if err != nil {
		return Node{}, false
	}
	goneNodes.Lock()
	r, ok := goneNodes.m[path]
	goneNodes.Unlock()
	if ok && r.size == info.Size() && r.mod.Equal(info.ModTime()) {
		return r.node.copy(), true
	}
	n, ok := readGone(path, id)
	if !ok {
		return Node{}, false
	}
	goneNodes.Lock()
	if len(goneNodes.m) >= maxGoneNodes {
		goneNodes.m = map[string]goneRead{}
	}
	goneNodes.m[path] = goneRead{size: info.Size(), mod: info.ModTime(), node: n.copy()}
	goneNodes.Unlock()
	return n, true
}

// copy is n with figures of its own, so the redaction guard's changes to
// a served tree never reach a remembered node.
func (n Node) copy() Node {
	f := make(map[string]any, len(n.Figures))
	for k, v := range n.Figures {
		f[k] = v
	}
	n.Figures = f
	n.Children = nil
	return n
}

// readGone reads the being id from its state.json at path, caught up
// with the journal events past its checkpoint, as `singularity status`
// reads it.
func readGone(path, id string) (Node, bool) {
	dir := filepath.Dir(path)
	st, err := state.Load(dir)
	if err != nil {
		return Node{}, false
	}
	if st.JournalSeq != nil {
		from := *st.JournalSeq
		events, err := state.ReadAllPast(dir, from)
		if err != nil && !errors.Is(err, state.ErrTornLine) {
			return Node{}, false
		}
		for _, e := range events {
			if e.Seq > from {
				st.Apply(e)
			}
		}
	}
	b := st.Budget
	f := map[string]any{
		"id":          id,
		FigureActor:   "gone",
		"cycle":       st.Cycle,
		"balance":     b.Remaining.String(),
		"starting":    b.Starting.String(),
		"spent":       b.APISpent.Add(b.InstanceSpent).String(),
		"earned":      b.Earned.String(),
		"granted":     b.Granted.String(),
		"funded":      b.Funded.String(),
		"remaining":   b.Remaining.String(),
		"last_action": "",
	}
	if n := len(st.RecentActions); n > 0 {
		a := st.RecentActions[n-1]
		f["last_action"] = a.Tool + ":" + a.Status
	}
	if r := st.LastReply(); r != "" {
		f["last_reply"] = r
	}
	if st.StatusReason != "" {
		f["reason"] = st.StatusReason
	}
	return Node{Kind: "being", Name: st.Identity.Name, Status: st.Status, Figures: f}, true
}

// gone reports whether n is a being put back by addGone.
func gone(n *Node) bool { return n.Kind == "being" && n.Figures[FigureActor] == "gone" }
