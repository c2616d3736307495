package debug

import (
	"slices"
	"strings"
)

// Part is one member's own tree of a family spread over members
// (docs/cluster.md#placement): its family node, with the beings it
// holds directly under it, each labelled with the member.
type Part struct {
	Member string
	Tree   Node
}

// Ended is a being of a spread family that runs nowhere because it
// ended: its node as the shared root's committed state shows it.
type Ended struct {
	ID   string
	Node Node
}

// MergeSpread is the whole of a family spread over members as one tree:
// one family node, under it each member's gateway and limiter (their
// ids prefixed with the member's name, so no two nodes share one), then
// the root being with every being nested under its parent as in one
// process, each with the member it runs on. parents maps every
// registered child's id to its parent's ("root" for the root's; the
// root's own node is the being no registration names). A being
// registered but running nowhere, and not ended (it moves between
// members now), is a node of status unresponsive, as is a root running
// nowhere, so the family ledger says "unknown" rather than a wrong
// verdict.
func MergeSpread(parts []Part, ended []Ended, parents map[string]string) Node {
	family := Node{PID: "family", Kind: "family", Name: "family", Status: "running",
		Figures: map[string]any{"placement": "being"}}
	var members []string
	beings := map[string]Node{}
	for _, part := range parts {
		members = append(members, part.Member)
		for _, c := range part.Tree.Children {
			if c.Kind == "being" {
				id, _ := c.Figures["id"].(string)
				beings[id] = c
				continue
			}
			prefixPIDs(&c, part.Member)
			if c.Figures == nil {
				c.Figures = map[string]any{}
			}
			c.Figures["member"] = part.Member
			family.Children = append(family.Children, c)
		}
	}
	family.Figures["members"] = members
	for _, e := range ended {
		if _, running := beings[e.ID]; !running {
			beings[e.ID] = e.Node
		}
	}
	const rootID = "root"
	children := map[string][]string{}
	rootNode := ""
	for id := range beings {
		parent, registered := parents[id]
		switch {
		case !registered:
			rootNode = id
		default:
			children[parent] = append(children[parent], id)
		}
	}
	for id, parent := range parents {
		if _, present := beings[id]; !present {
			beings[id] = Node{PID: "family/being-" + id, Kind: "being", Name: id, Status: StatusUnresponsive}
			children[parent] = append(children[parent], id)
		}
	}
	var build func(id string, depth int) Node
	build = func(id string, depth int) Node {
		n := beings[id]
		key := id
		if id == rootNode {
			key = rootID
		}
		kids := children[key]
		slices.Sort(kids)
		if depth < maxTreeDepth {
			for _, k := range kids {
				n.Children = append(n.Children, build(k, depth+1))
			}
		}
		return n
	}
	if rootNode == "" {
		family.Children = append(family.Children, build(rootID, 0))
		root := &family.Children[len(family.Children)-1]
		root.PID, root.Kind, root.Name, root.Status = "family/being-root", "being", rootID, StatusUnresponsive
	} else {
		family.Children = append(family.Children, build(rootNode, 0))
	}
	AddFamilyLedger(&family)
	return family
}

// prefixPIDs gives n and everything below it ids under member's name.
func prefixPIDs(n *Node, member string) {
	if n.PID != "" && !strings.HasPrefix(n.PID, member+"/") {
		n.PID = member + "/" + n.PID
	}
	for i := range n.Children {
		prefixPIDs(&n.Children[i], member)
	}
}
