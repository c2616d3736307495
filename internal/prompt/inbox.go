package prompt

import (
	"strings"

	"github.com/wisent/singularity/internal/store/state"
)

// Message is the sentence a framing carries for a received message m
// (docs/family.md#messages): "Message from the operator: <text>" for
// the operator's, "Message from <name> (<relation>): <text>" for a
// relative's. A relative's message without a name is attributed to its
// sender's id.
func Message(m state.InMessage) string {
	if m.From == state.FromOperator {
		return "Message from the operator: " + m.Text
	}
	who := m.Name
	if who == "" {
		who = m.From
	}
	if m.Relation != "" {
		who += " (" + m.Relation + ")"
	}
	return "Message from " + who + ": " + m.Text
}

// WithMessages returns framing with one paragraph per message of inbox
// appended, in order (Message); framing itself when the inbox is empty.
// The texts are taken as they are: screening them is the caller's.
func WithMessages(framing string, inbox []state.InMessage) string {
	if len(inbox) == 0 {
		return framing
	}
	var b strings.Builder
	b.WriteString(framing)
	for _, m := range inbox {
		b.WriteString("\n\n")
		b.WriteString(Message(m))
	}
	return strings.Clone(b.String())
}
