package debug

import (
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
)

// Family ledger figures of the family node (docs/debug.md#the-family-ledger).
const (
	FigureFamilyStarting  = "family_starting"
	FigureFamilyGranted   = "family_granted"
	FigureFamilySpent     = "family_spent"
	FigureFamilyEarned    = "family_earned"
	FigureFamilyRemaining = "family_remaining"
	FigureFamilyLedger    = "family_ledger"
)

// AddFamilyLedger adds the family's totals to each family node of the
// tree: the beings' starting, granted, spent, earned and remaining, and
// the family invariant ("exact" or "off by <amount>",
// docs/money.md#the-family-ledger). The first being under a family node
// is its root. A being whose figures are missing or do not parse (it was
// unresponsive) makes the verdict "unknown"; a tree whose beings carry
// no ledger figures at all gets none.
func AddFamilyLedger(n *Node) {
	if n.Kind == "family" {
		var t accounts.Totals
		complete, known := true, 0
		root := true
		for i := range n.Children {
			if n.Children[i].Kind == "being" || n.Children[i].Status == StatusUnresponsive {
				complete = addBeings(&t, &n.Children[i], root, &known) && complete
				root = false
			}
		}
		if known > 0 {
			if n.Figures == nil {
				n.Figures = map[string]any{}
			}
			n.Figures[FigureFamilyStarting] = t.Starting.String()
			n.Figures[FigureFamilyGranted] = t.Granted.String()
			n.Figures[FigureFamilySpent] = t.Spent.String()
			n.Figures[FigureFamilyEarned] = t.Earned.String()
			n.Figures[FigureFamilyRemaining] = t.Remaining.String()
			verdict := t.Verdict()
			if !complete {
				verdict = "unknown"
			}
			n.Figures[FigureFamilyLedger] = verdict
		}
	}
	for i := range n.Children {
		AddFamilyLedger(&n.Children[i])
	}
}

// addBeings adds the being node n and the beings below it to t; it
// reports false when a being's figures could not be read.
func addBeings(t *accounts.Totals, n *Node, root bool, known *int) bool {
	if n.Kind != "being" {
		return n.Status != StatusUnresponsive
	}
	e, ok := entryOf(n)
	e.Root = root
	t.Add(e)
	if ok {
		*known++
	}
	// What departed children held is counted once: by their own nodes
	// when they are on the tree (addGone), else by the departed figures.
	if held, earned, funded := figure(n, "departed_held"), figure(n, "departed_earned"), figure(n, "departed_funded"); (held.ok || earned.ok) && !hasGone(n) {
		t.AddDeparted(held.v, earned.v, funded.v)
	}
	for i := range n.Children {
		if k := n.Children[i].Kind; k == "being" || (k == "" && n.Children[i].Status == StatusUnresponsive) {
			ok = addBeings(t, &n.Children[i], false, known) && ok
		}
	}
	return ok
}

type parsed struct {
	v  money.Amount
	ok bool
}

func figure(n *Node, key string) parsed {
	s, ok := n.Figures[key].(string)
	if !ok {
		return parsed{}
	}
	v, err := money.Parse(s)
	return parsed{v, err == nil}
}

// entryOf reads a being node's ledger figures.
func entryOf(n *Node) (accounts.Entry, bool) {
	var e accounts.Entry
	ok := true
	for _, f := range []struct {
		key string
		to  *money.Amount
	}{
		{"starting", &e.Budget.Starting}, {"remaining", &e.Budget.Remaining}, {"spent", &e.Budget.APISpent},
		{"earned", &e.Budget.Earned}, {"granted", &e.Budget.Granted},
	} {
		p := figure(n, f.key)
		*f.to, ok = p.v, ok && p.ok
	}
	if p := figure(n, "in_transit"); p.ok {
		e.InTransit = p.v
	}
	if p := figure(n, "funded"); p.ok {
		e.Budget.Funded = p.v
	}
	return e, ok
}

// hasGone reports whether a child of n is a being whose actor is gone.
func hasGone(n *Node) bool {
	for i := range n.Children {
		if gone(&n.Children[i]) {
			return true
		}
	}
	return false
}
