package debug

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func beingNode(name string, figures map[string]any, children ...Node) Node {
	return Node{Kind: "being", Name: name, Status: "running", Figures: figures, Children: children}
}

func ledgerFigures(starting, remaining, spent, earned, granted string) map[string]any {
	return map[string]any{"starting": starting, "remaining": remaining, "spent": spent, "earned": earned, "granted": granted}
}

func TestAddFamilyLedger(t *testing.T) {
	with := func(m map[string]any, k, v string) map[string]any { m[k] = v; return m }
	tests := []struct {
		name    string
		root    Node
		verdict string
	}{
		{"conserved", beingNode("Ada", ledgerFigures("10", "6.5", "0.5", "1", "4"),
			beingNode("Bo", ledgerFigures("4", "4.25", "0.25", "0.5", "0"))), "exact"},
		{"a grant in transit", beingNode("Ada", with(ledgerFigures("10", "6.5", "0.5", "1", "4"), "in_transit", "4")), "exact"},
		{"a child that stopped", beingNode("Ada", with(with(ledgerFigures("10", "6.5", "0.5", "1", "4"), "departed_held", "4.5"), "departed_earned", "0.5")), "exact"},
		{"a child holding too much", beingNode("Ada", ledgerFigures("10", "6.5", "0.5", "1", "4"),
			beingNode("Bo", ledgerFigures("4", "4.26", "0.25", "0.5", "0"))), "off by 0.01"},
		{"an unresponsive child", beingNode("Ada", ledgerFigures("10", "6.5", "0.5", "1", "4"),
			Node{Status: StatusUnresponsive}), "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree := Node{Kind: "family", Name: "family", Status: "running", Children: []Node{{Kind: "brama"}, tc.root}}
			AddFamilyLedger(&tree)
			require.Equal(t, tc.verdict, tree.Figures[FigureFamilyLedger])
			require.Equal(t, "10", tree.Figures[FigureFamilyStarting], "only the root's starting balance came from outside")
		})
	}
	// Beings without ledger figures (a tree of another shape) get none.
	tree := Node{Kind: "family", Children: []Node{beingNode("Ada", map[string]any{"cycle": 1})}}
	AddFamilyLedger(&tree)
	require.Nil(t, tree.Figures)
}
