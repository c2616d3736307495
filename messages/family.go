package messages

// RelayMessage carries a relative's message (docs/family.md#messages)
// through a family spread over members: the family hands Request to the
// being living in Dir when it runs that being, the answer going to the
// sender as if asked directly, and answers MessageNotHere otherwise.
type RelayMessage struct {
	Dir     string
	Request MessageRequest
}

// MessageNotHere answers a RelayMessage whose receiver the family does
// not run now: another member holds it, or it is not up yet. The sender
// tries again later.
type MessageNotHere struct{}
