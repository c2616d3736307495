package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// maxTreeDepth bounds how deep a decoded tree may nest, so a tree from
// another member cannot exhaust the stack.
const maxTreeDepth = 256

// TreeOf is the tree the debug routes serve for cfg: asked of
// cfg.Elsewhere when it is set (a member that does not hold its family
// asks the one that does), else collected from cfg.Root and cfg.PID,
// with the family's ledger added and, on a member of a family across
// processes (cfg.Member), each being labelled with that member.
//
// A text of the tree that holds one of cfg.Secrets is Redacted.
func TreeOf(ctx context.Context, cfg HandlerConfig) (Node, error) {
	if cfg.Elsewhere != nil {
		tree, err := cfg.Elsewhere(ctx)
		if err == nil {
			(&guard{runtime: cfg.Secrets}).node(&tree)
		}
		return tree, err
	}
	tree := Collect(ctx, cfg.Root, cfg.PID, cfg.Deadline)
	if cfg.Member == "" && cfg.Committed == nil {
		// One process holds the whole family: a being missing from
		// the actors has ended.
		addGone(&tree, cfg.StateDir)
	}
	AddFamilyLedger(&tree)
	if cfg.Member != "" {
		labelBeings(&tree, cfg.Member)
	}
	(&guard{runtime: cfg.Secrets}).node(&tree)
	return tree, nil
}

// labelBeings gives every being of the tree the figure "member": the
// member of a family across processes it runs on.
func labelBeings(n *Node, member string) {
	if n.Kind == "being" {
		if n.Figures == nil {
			n.Figures = map[string]any{}
		}
		n.Figures["member"] = member
	}
	for i := range n.Children {
		labelBeings(&n.Children[i], member)
	}
}

// DecodeTree reads a tree in the form GET /debug/actors serves it (from
// another member), screening every name, status and figure by this
// process's redaction guard again, as Collect screens what actors say.
func DecodeTree(raw []byte) (Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return Node{}, fmt.Errorf("the tree is not a JSON object: %w", err)
	}
	return nodeOf(v, processGuard(), 0)
}

var errTooDeep = errors.New("the tree nests too deep")

func nodeOf(v map[string]any, g *guard, depth int) (Node, error) {
	if depth > maxTreeDepth {
		return Node{}, errTooDeep
	}
	text := func(key string) string {
		s, _ := v[key].(string)
		return g.text(s)
	}
	n := Node{PID: text("pid"), Kind: text("kind"), Name: text("name"), Status: text("status")}
	figures := map[string]any{}
	for k, e := range v {
		if !reservedKeys[k] {
			figures[k] = e
		}
	}
	n.Figures = g.figures(figures)
	children, _ := v["children"].([]any)
	for _, c := range children {
		m, ok := c.(map[string]any)
		if !ok {
			return Node{}, fmt.Errorf("a child of %s is not an object", n.PID)
		}
		child, err := nodeOf(m, g, depth+1)
		if err != nil {
			return Node{}, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}
