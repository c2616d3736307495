// Package framing holds the fixed words of a cycle's framing message
// (docs/cycle.md#the-framing-message), the text between its figures.
// Package prompt writes the message from them; package state recognises a
// framing message by its Prefix and packs the words where a held
// conversation repeats them. The words sit beneath both, so they have one
// owner and the store imports no prompt code.
package framing

// The framing message is Prefix, the cycle, AfterCycle, the balance,
// AfterBalance, the earnings, AfterEarned, the net profit, AfterNet, the
// model, AfterModel, the recent actions, and End.
const (
	// Prefix starts every cycle's framing message, and only it.
	Prefix       = "Begin autonomous cycle "
	AfterCycle   = ". Balance: "
	AfterBalance = " USD. Earned: "
	AfterEarned  = " USD. Net profit: "
	AfterNet     = " USD. Current model: "
	AfterModel   = ". Recent actions: "
	End          = ". Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."
)
