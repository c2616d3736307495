package messages

// LedgerFiguresRequest is a being's ledger asking its being for the
// figures of the ledger's node in the debug tree (docs/debug.md#figures).
// The ledger sends it with the sender of the DescribeRequest it got, and the
// being, which owns the money, answers that sender with the ledger's
// Description.
type LedgerFiguresRequest struct{}
