package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
)

// The family tools (docs/tools.md#family-tools): registered only with
// --family-tools, so that the catalogue of the nine built-ins stays the
// seed's by default.
const (
	MessageSend = "singularity_message_send"
	SelfSleep   = "singularity_self_sleep"
)

// Limits and error codes of the family tools.
const (
	// MaxMessageBytes bounds a message's text (UTF-8).
	MaxMessageBytes = 8 << 10
	// MaxSleepSeconds is the longest sleep: 30 days.
	MaxSleepSeconds = 30 * 24 * 60 * 60

	CodeUnknownRecipient = "unknown_recipient"
	CodeRecipientEnded   = "recipient_ended"
)

// Relations of a message's sender to its receiver.
const (
	RelationParent = "parent"
	RelationChild  = "child"
)

// FamilyDefinitions returns the two family tools in catalogue order:
// message_send, then self_sleep. The slice is fresh on every call.
func FamilyDefinitions() []chat.Tool {
	return []chat.Tool{
		chat.NewTool(MessageSend,
			"Send a message to this being's parent (to: \"parent\") or to one of its own children (to: its name or id); it reaches the receiver's next cycle exactly once",
			json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to","text"],"additionalProperties":false}`)),
		chat.NewTool(SelfSleep,
			"End this cycle and sleep: no model call until the seconds pass or, with wake_on_message (the default), a message or a fund arrives",
			json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"seconds":{"type":"integer","minimum":1,"maximum":%d},"wake_on_message":{"type":"boolean","default":true}},"required":["seconds"],"additionalProperties":false}`, MaxSleepSeconds))),
	}
}

// Recipient is whom a message goes to: its id and name, and whether it
// is the sender's parent (else one of its children).
type Recipient struct {
	ID, Name string
	Parent   bool
}

// Relation is the sender's relation to r, which the receiver's framing
// names: a message to a parent comes from its child.
func (r Recipient) Relation() string {
	if r.Parent {
		return RelationChild
	}
	return RelationParent
}

// Family is what the family tools need of the caller: its parent's id
// and name (empty for the root, which has none).
type Family struct {
	ParentID, ParentName string
}

// ResolveRecipient reads a message_send's to: "parent", or the id or
// name of one of children (an id first; a name two children share is
// refused, asking for the id). A failure is the unknown_recipient
// outcome, its message saying why.
func ResolveRecipient(to string, children []state.Child, fam Family) (Recipient, *outcome.Outcome) {
	unknown := func(msg string) (Recipient, *outcome.Outcome) {
		o := outcome.Failure(CodeUnknownRecipient, msg)
		return Recipient{}, &o
	}
	if to == "parent" {
		if fam.ParentID == "" {
			return unknown("this being is the root: it has no parent")
		}
		return Recipient{ID: fam.ParentID, Name: fam.ParentName, Parent: true}, nil
	}
	for _, c := range children {
		if c.ID == to {
			return Recipient{ID: c.ID, Name: c.Name}, nil
		}
	}
	var found *state.Child
	for i := range children {
		if children[i].Name != to {
			continue
		}
		if found != nil {
			return unknown("two children are named " + to + ": give the child's id")
		}
		found = &children[i]
	}
	if found == nil {
		return unknown("to must be \"parent\" or the name or id of one of this being's own children")
	}
	return Recipient{ID: found.ID, Name: found.Name}, nil
}

// Send asks the being to send a message: the being decides whether the
// recipient has ended (Ended) or records the message as sent (Sent).
type Send struct {
	ID   string // the message's id, fresh
	To   Recipient
	Text string
}

func (Send) effect() {}

// Sent is the call's result when the message goes out: success with
// its id, and message_sent, which puts it in the sender's outbox in the
// step of the call.
func (s Send) Sent() Result {
	return changed(succeed(struct {
		Status    string `json:"status"`
		MessageID string `json:"message_id"`
	}{"success", s.ID}), state.MessageSent(state.Time{}, 0, state.OutMessage{ID: s.ID, To: s.To.ID, Text: s.Text}))
}

// Ended is the call's result when the recipient has ended: nothing is
// sent, nothing stays in the outbox.
func (s Send) Ended() Result {
	who := s.To.Name
	if who == "" {
		who = "the parent"
	}
	return final(outcome.Failure(CodeRecipientEnded, who+" has ended and takes no more messages"))
}

// messageSend checks message_send's arguments and resolves its
// recipient; the being carries out the Send.
func (t *Tools) messageSend(args json.RawMessage, mind *state.Mind, fam Family) Result {
	v, bad := parseArgs(args, field{key: "to", max: 256}, field{key: "text", max: MaxMessageBytes, content: true})
	if bad != nil {
		return final(*bad)
	}
	text := v[1]
	if strings.TrimSpace(text) == "" || !utf8.ValidString(text) {
		return final(outcome.Failure(CodeInvalidArguments, "text is invalid"))
	}
	var children []state.Child
	if mind != nil {
		children = mind.Children
	}
	to, bad := ResolveRecipient(v[0], children, fam)
	if bad != nil {
		return final(*bad)
	}
	return Result{Effect: Send{ID: t.env.NewID(), To: to, Text: text}}
}

// SleepArgs reads self_sleep's arguments: seconds, a JSON integer from 1
// to MaxSleepSeconds, and wake_on_message, a boolean that defaults to
// true. Anything else is the invalid_arguments outcome.
func SleepArgs(args json.RawMessage) (seconds int64, wake bool, bad *outcome.Outcome) {
	invalid := func(msg string) (int64, bool, *outcome.Outcome) {
		o := outcome.Failure(CodeInvalidArguments, msg)
		return 0, false, &o
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return invalid("arguments must be a JSON object")
	}
	for k := range obj {
		if k != "seconds" && k != "wake_on_message" {
			return invalid(k + " is invalid")
		}
	}
	raw, ok := obj["seconds"]
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var n json.Number
	if !ok || bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || dec.Decode(&n) != nil {
		return invalid("seconds is invalid")
	}
	seconds, err := n.Int64()
	if err != nil || seconds < 1 || seconds > MaxSleepSeconds {
		return invalid(fmt.Sprintf("seconds must be a whole number from 1 to %d", MaxSleepSeconds))
	}
	wake = true
	if raw, ok := obj["wake_on_message"]; ok {
		if err := json.Unmarshal(raw, &wake); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return invalid("wake_on_message is invalid")
		}
	}
	return seconds, wake, nil
}

// selfSleep records the sleep: slept with the instant it ends. The being
// ends the cycle once the calls of the round have run.
func (t *Tools) selfSleep(args json.RawMessage) Result {
	seconds, wake, bad := SleepArgs(args)
	if bad != nil {
		return final(*bad)
	}
	until := state.Time{Time: t.env.Now().UTC().Add(time.Duration(seconds) * time.Second).Truncate(time.Second)}
	return changed(succeed(struct {
		SleepingUntil string `json:"sleeping_until"`
		WakeOnMessage bool   `json:"wake_on_message"`
	}{until.Format(time.RFC3339), wake}), state.Slept(state.Time{}, 0, until, wake))
}
