package debug

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func memberBeing(id, name, member, starting, granted, remaining string) Node {
	return Node{PID: "family/being-" + id, Kind: "being", Name: name, Status: "running", Figures: map[string]any{
		"id": id, "member": member, "starting": starting, "granted": granted, "spent": "0", "earned": "0", "remaining": remaining,
	}, Children: []Node{{PID: "family/being-" + id + "/ledger", Kind: "ledger", Name: "ledger", Status: "running"}}}
}

func part(member string, beings ...Node) Part {
	tree := Node{PID: "family", Kind: "family", Name: "family", Status: "running",
		Children: []Node{{PID: "family/brama", Kind: "brama", Name: "brama", Status: "running"}}}
	tree.Children = append(tree.Children, beings...)
	return Part{Member: member, Tree: tree}
}

// names lists the tree's being nodes depth first as name@member.
func names(n Node) []string {
	var out []string
	if n.Kind == "being" {
		m, _ := n.Figures["member"].(string)
		out = append(out, n.Name+"@"+m)
	}
	for _, c := range n.Children {
		out = append(out, names(c)...)
	}
	return out
}

func TestMergeSpread(t *testing.T) {
	parents := map[string]string{"bo": "root", "cy": "root", "di": "bo"}
	ada := memberBeing("agent-1", "Ada", "m1", "1", "0.6", "0.4")
	bo := memberBeing("bo", "Bo", "m2", "0.5", "0.2", "0.3")
	cy := memberBeing("cy", "Cy", "m1", "0.1", "0", "0.1")
	di := memberBeing("di", "Di", "", "0.2", "0", "0.2")
	di.Status = "exhausted"

	whole := MergeSpread([]Part{part("m1", ada, cy), part("m2", bo)}, []Ended{{ID: "di", Node: di}}, parents)
	assert.Equal(t, []string{"Ada@m1", "Bo@m2", "Di@", "Cy@m1"}, names(whole), "every being under its parent, each with its member")
	require.Len(t, whole.Children, 3, "two gateways, then the root")
	assert.Equal(t, "m1/family/brama", whole.Children[0].PID)
	assert.Equal(t, "m2", whole.Children[1].Figures["member"])
	assert.Equal(t, "family/being-agent-1/ledger", whole.Children[2].Children[0].PID, "a being keeps its own ids")
	assert.Equal(t, []string{"m1", "m2"}, whole.Figures["members"])
	assert.Equal(t, "exact", whole.Figures[FigureFamilyLedger])

	moving := MergeSpread([]Part{part("m1", ada, cy)}, []Ended{{ID: "di", Node: di}}, parents)
	assert.Equal(t, []string{"Ada@m1", "bo@", "Di@", "Cy@m1"}, names(moving))
	assert.Equal(t, "unknown", moving.Figures[FigureFamilyLedger], "a being between members leaves the ledger unknown")

	rootless := MergeSpread([]Part{part("m2", bo)}, nil, parents)
	assert.Equal(t, "root", rootless.Children[1].Name)
	assert.Equal(t, StatusUnresponsive, rootless.Children[1].Status)
	assert.Equal(t, "unknown", rootless.Figures[FigureFamilyLedger])
}
