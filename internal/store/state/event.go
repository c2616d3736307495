package state

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Journal event types (docs/state.md#the-journal). The first eight are
// the reference's; the mind events record each change a tool made to the
// mind, so that the journal alone rebuilds the being.
const (
	EventStarted         = "started"
	EventCycleStarted    = "cycle_started"
	EventModelCompleted  = "model_completed"
	EventCostDebited     = "cost_debited"
	EventToolFinished    = "tool_finished"
	EventRevenueCredited = "revenue_credited"
	EventWarning         = "warning"
	EventStopped         = "stopped"

	EventMemoryAdded   = "memory_added"
	EventPromptSet     = "prompt_set"
	EventRuleAdded     = "rule_added"
	EventLearningAdded = "learning_added"
	EventModelSwitched = "model_switched"
	EventChildAdded    = "child_added"
	// EventEndowmentGranted moves money to a child being
	// (docs/money.md#funded-children): a step of its own, before the
	// child's state exists.
	EventEndowmentGranted = "endowment_granted"
	// EventTierChanged records the survival tier the being entered
	// (docs/money.md#survival-tiers).
	EventTierChanged = "tier_changed"

	// EventFunded adds money from outside the family to the being
	// (docs/money.md#funding): the operator's fund, applied once per key.
	EventFunded = "funded"
	// EventMessageReceived takes a message into the being's inbox
	// (docs/family.md#messages); the next cycle's framing carries it.
	EventMessageReceived = "message_received"
	// EventMessageSent puts a message to a relative in the being's
	// outbox, in the step of the tool call that sent it.
	EventMessageSent = "message_sent"
	// EventMessageDelivered takes a message out of the outbox once its
	// receiver has journaled it.
	EventMessageDelivered = "message_delivered"
	// EventSlept records that the being sleeps until a time
	// (docs/family.md#sleep).
	EventSlept = "slept"
)

// Event is one line of activity.jsonl. Which fields belong to an event
// depends on its Type; MarshalJSON writes exactly those, "type" first,
// then "seq", then the rest in this order:
//
//	started          {at}
//	cycle_started    {at, cycle, messages?}
//	model_completed  {at, cycle, usage, message}
//	cost_debited     {at, cycle, amount, api?, instance?, tokens?}
//	tool_finished    {at, cycle, tool, status, message, action, created?}
//	revenue_credited {at, cycle, amount, source}
//	warning          {at, cycle, message, repeats?}
//	stopped          {at, cycle, status, reason?}
//	memory_added     {at, cycle, memory}
//	prompt_set       {at, cycle, text}
//	rule_added       {at, cycle, text}
//	learning_added   {at, cycle, text}
//	model_switched   {at, cycle, model}
//	child_added      {at, cycle, child}
//	endowment_granted {at, cycle, child_id, amount, child}
//	tier_changed     {at, cycle, tier, remaining}
//	funded           {at, cycle, amount, key, note?}
//	message_received {at, cycle, id, from, name?, relation?, text}
//	message_sent     {at, cycle, id, to, text}
//	message_delivered {at, cycle, id, reason?}
//	slept            {at, cycle, until, wake_on_message}
//
// cycle_started also carries "delivered", the ids of the inbox messages
// its framing carried, when there were any.
//
// The fields after the reference's (seq, messages, message on
// model_completed and tool_finished, api, instance, tokens, action,
// created, repeats) are optional on read: a journal written by the
// reference still loads, its events numbered by their position.
// Build events with the constructors below.
type Event struct {
	Type string
	// Seq numbers the being's events 1, 2, 3, … with no gaps; the journal
	// assigns it when a step is appended.
	Seq   uint64
	At    Time
	Cycle uint64

	Usage  chat.Usage
	Amount money.Amount
	// API, Instance and Tokens split a debit as the ledger priced it.
	API, Instance money.Amount
	Tokens        uint64
	Source        string
	Tool          string
	Status        string
	// Message is a warning's text.
	Message string
	// Repeats counts the attempts a repeated warning stands for (0: one).
	Repeats int
	// Messages are the framing (and stimulus) messages of cycle_started.
	Messages []chat.Message
	// Chat is the assistant message of model_completed or the tool
	// message of tool_finished (written as "message").
	Chat    *chat.Message
	Action  *Action
	Created *CreatedResources

	Memory *Memory
	Text   string // the prompt, rule or learning
	Model  string
	Child  *Child
	// Tier is the survival tier tier_changed enters (1-based, 0 for
	// none); Amount is the remaining balance it was entered at.
	Tier int
	// Reason is why stopped's life ended (empty: not said), or why
	// message_delivered took a message out of the outbox undelivered.
	Reason string

	// Key and Note are a fund's idempotency key and the operator's note.
	Key, Note string
	// ID is a message's id; From, Name and Relation say who sent a
	// received one (From is "operator" or the sender's id), To whom a
	// sent one goes. The message's text is Text.
	ID, From, Name, Relation, To string
	// Delivered are the inbox message ids a cycle_started's framing
	// carried.
	Delivered []string
	// Until and WakeOnMessage are a slept event's.
	Until         Time
	WakeOnMessage bool
}

// Started is the event of a being coming alive (fresh or resumed).
func Started(at Time) Event { return Event{Type: EventStarted, At: at} }

// CycleStarted opens a cycle; msgs are its framing and stimulus messages.
func CycleStarted(at Time, cycle uint64, msgs ...chat.Message) Event {
	return Event{Type: EventCycleStarted, At: at, Cycle: cycle, Messages: msgs}
}

// ModelCompleted records a completion's token usage and, when msg is not
// nil, the assistant message it appended.
func ModelCompleted(at Time, cycle uint64, u chat.Usage, msg ...chat.Message) Event {
	e := Event{Type: EventModelCompleted, At: at, Cycle: cycle, Usage: u}
	if len(msg) > 0 {
		e.Chat = &msg[0]
	}
	return e
}

// Debited records a debit as the ledger priced it: api + instance =
// amount, and the tokens it adds to total_tokens.
func Debited(at Time, cycle uint64, api, instance money.Amount, tokens uint64) Event {
	return Event{Type: EventCostDebited, At: at, Cycle: cycle, Amount: api.Add(instance), API: api, Instance: instance, Tokens: tokens}
}

// ToolFinished records a tool call's outcome status.
func ToolFinished(at Time, cycle uint64, tool, status string) Event {
	return Event{Type: EventToolFinished, At: at, Cycle: cycle, Tool: tool, Status: status}
}

// RevenueCredited records a credit from trusted evidence returned by tool
// source.
func RevenueCredited(at Time, cycle uint64, amount money.Amount, source string) Event {
	return Event{Type: EventRevenueCredited, At: at, Cycle: cycle, Amount: amount, Source: source}
}

// Warning records a problem the being survived.
func Warning(at Time, cycle uint64, message string) Event {
	return Event{Type: EventWarning, At: at, Cycle: cycle, Message: message}
}

// Stopped records the final status of a being's life in this process.
func Stopped(at Time, cycle uint64, status, reason string) Event {
	return Event{Type: EventStopped, At: at, Cycle: cycle, Status: status, Reason: reason}
}

// MemoryAdded records a remembered memory.
func MemoryAdded(m Memory) Event { return Event{Type: EventMemoryAdded, Memory: &m} }

// PromptSet records a new system prompt.
func PromptSet(text string) Event { return Event{Type: EventPromptSet, Text: text} }

// RuleAdded records a self-imposed rule.
func RuleAdded(text string) Event { return Event{Type: EventRuleAdded, Text: text} }

// LearningAdded records a persistent learning.
func LearningAdded(text string) Event { return Event{Type: EventLearningAdded, Text: text} }

// ModelSwitched records a change of the current model.
func ModelSwitched(model string) Event { return Event{Type: EventModelSwitched, Model: model} }

// ChildAdded records a spawned child in the mind.
func ChildAdded(c Child) Event { return Event{Type: EventChildAdded, Child: &c} }

// EndowmentGranted records an endowment of amount moved to child c,
// whose state is created once this is durable.
func EndowmentGranted(c Child, amount money.Amount) Event {
	return Event{Type: EventEndowmentGranted, Amount: amount, Child: &c}
}

// TierChanged records that the being lives in survival tier from now on
// (0: none), entered at remaining.
func TierChanged(at Time, cycle uint64, tier int, remaining money.Amount) Event {
	return Event{Type: EventTierChanged, At: at, Cycle: cycle, Tier: tier, Amount: remaining}
}

// Funded records amount added to the being from outside under key,
// with the operator's note.
func Funded(at Time, cycle uint64, amount money.Amount, key, note string) Event {
	return Event{Type: EventFunded, At: at, Cycle: cycle, Amount: amount, Key: key, Note: note}
}

// MessageReceived takes message m into the inbox.
func MessageReceived(at Time, cycle uint64, m InMessage) Event {
	return Event{Type: EventMessageReceived, At: at, Cycle: cycle, ID: m.ID, From: m.From, Name: m.Name, Relation: m.Relation, Text: m.Text}
}

// MessageSent puts message m into the outbox.
func MessageSent(at Time, cycle uint64, m OutMessage) Event {
	return Event{Type: EventMessageSent, At: at, Cycle: cycle, ID: m.ID, To: m.To, Text: m.Text}
}

// MessageDelivered takes message id out of the outbox: its receiver
// took it, or (Reason "recipient_ended") had ended and never will.
func MessageDelivered(at Time, cycle uint64, id string) Event {
	return Event{Type: EventMessageDelivered, At: at, Cycle: cycle, ID: id}
}

// Slept records a sleep until until; wake says whether a message or a
// fund ends it sooner.
func Slept(at Time, cycle uint64, until Time, wake bool) Event {
	return Event{Type: EventSlept, At: at, Cycle: cycle, Until: until, WakeOnMessage: wake}
}

// IsMindChange reports whether the event changes the mind.
func (e Event) IsMindChange() bool {
	switch e.Type {
	case EventMemoryAdded, EventPromptSet, EventRuleAdded, EventLearningAdded, EventModelSwitched, EventChildAdded:
		return true
	}
	return false
}

// MarshalJSON writes the event's own fields in the order above.
func (e Event) MarshalJSON() ([]byte, error) {
	var w objectWriter
	w.field("type", e.Type)
	if e.Seq > 0 {
		w.field("seq", e.Seq)
	}
	w.field("at", e.At)
	if e.Type != EventStarted {
		w.field("cycle", e.Cycle)
	}
	switch e.Type {
	case EventStarted:
	case EventCycleStarted:
		if len(e.Messages) > 0 {
			w.field("messages", e.Messages)
		}
		if len(e.Delivered) > 0 {
			w.field("delivered", e.Delivered)
		}
	case EventModelCompleted:
		w.field("usage", e.Usage)
		if e.Chat != nil {
			w.field("message", e.Chat)
		}
	case EventCostDebited:
		w.field("amount", e.Amount)
		// The split is written unless it is the default a reader assumes
		// (all of it API, no tokens), so the reference's shape stays.
		if !e.API.Equal(e.Amount) || e.Instance.Sign() != 0 || e.Tokens != 0 {
			w.field("api", e.API)
			w.field("instance", e.Instance)
			w.field("tokens", e.Tokens)
		}
	case EventToolFinished:
		w.field("tool", e.Tool)
		w.field("status", e.Status)
		if e.Chat != nil {
			w.field("message", e.Chat)
		}
		if e.Action != nil {
			w.field("action", e.Action)
		}
		if e.Created != nil {
			c := CreatedResources{ChatIDs: nonNil(e.Created.ChatIDs), MessageIDs: nonNil(e.Created.MessageIDs)}
			w.field("created", c)
		}
	case EventRevenueCredited:
		w.field("amount", e.Amount)
		w.field("source", e.Source)
	case EventWarning:
		w.field("message", e.Message)
		if e.Repeats > 1 {
			w.field("repeats", e.Repeats)
		}
	case EventStopped:
		w.field("status", e.Status)
		if e.Reason != "" {
			w.field("reason", e.Reason)
		}
	case EventMemoryAdded:
		w.field("memory", e.Memory)
	case EventPromptSet, EventRuleAdded, EventLearningAdded:
		w.field("text", e.Text)
	case EventModelSwitched:
		w.field("model", e.Model)
	case EventChildAdded:
		w.field("child", e.Child)
	case EventEndowmentGranted:
		id := ""
		if e.Child != nil {
			id = e.Child.ID
		}
		w.field("child_id", id)
		w.field("amount", e.Amount)
		w.field("child", e.Child)
	case EventTierChanged:
		w.field("tier", e.Tier)
		w.field("remaining", e.Amount)
	case EventFunded:
		w.field("amount", e.Amount)
		w.field("key", e.Key)
		if e.Note != "" {
			w.field("note", e.Note)
		}
	case EventMessageReceived:
		w.field("id", e.ID)
		w.field("from", e.From)
		if e.Name != "" {
			w.field("name", e.Name)
		}
		if e.Relation != "" {
			w.field("relation", e.Relation)
		}
		w.field("text", e.Text)
	case EventMessageSent:
		w.field("id", e.ID)
		w.field("to", e.To)
		w.field("text", e.Text)
	case EventMessageDelivered:
		w.field("id", e.ID)
		if e.Reason != "" {
			w.field("reason", e.Reason)
		}
	case EventSlept:
		w.field("until", e.Until)
		w.field("wake_on_message", e.WakeOnMessage)
	default:
		return nil, fmt.Errorf("unknown journal event type %q", e.Type)
	}
	return w.close()
}

// eventFields is the union of every event's fields as read. Message is
// raw: a warning's is a string, model_completed's and tool_finished's a
// chat message.
type eventFields struct {
	Type      string            `json:"type"`
	Seq       uint64            `json:"seq"`
	At        Time              `json:"at"`
	Cycle     uint64            `json:"cycle"`
	Usage     chat.Usage        `json:"usage"`
	Amount    money.Amount      `json:"amount"`
	API       *money.Amount     `json:"api"`
	Instance  money.Amount      `json:"instance"`
	Tokens    uint64            `json:"tokens"`
	Source    string            `json:"source"`
	Tool      string            `json:"tool"`
	Status    string            `json:"status"`
	Message   json.RawMessage   `json:"message"`
	Repeats   int               `json:"repeats"`
	Messages  []chat.Message    `json:"messages"`
	Action    *Action           `json:"action"`
	Created   *CreatedResources `json:"created"`
	Memory    *Memory           `json:"memory"`
	Text      string            `json:"text"`
	Model     string            `json:"model"`
	Child     *Child            `json:"child"`
	Tier      int               `json:"tier"`
	Remaining *money.Amount     `json:"remaining"`
	Reason    string            `json:"reason"`
	Key       string            `json:"key"`
	Note      string            `json:"note"`
	ID        string            `json:"id"`
	From      string            `json:"from"`
	Name      string            `json:"name"`
	Relation  string            `json:"relation"`
	To        string            `json:"to"`
	Delivered []string          `json:"delivered"`
	Until     Time              `json:"until"`
	Wake      bool              `json:"wake_on_message"`
}

// UnmarshalJSON reads any event, the reference's included. A
// cost_debited without "api" (the reference's) counts its whole amount as
// API spending until recovery splits it.
func (e *Event) UnmarshalJSON(data []byte) error {
	var f eventFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*e = Event{
		Type: f.Type, Seq: f.Seq, At: f.At, Cycle: f.Cycle, Usage: f.Usage, Amount: f.Amount,
		Instance: f.Instance, Tokens: f.Tokens, Source: f.Source, Tool: f.Tool, Status: f.Status,
		Repeats: f.Repeats, Messages: f.Messages, Action: f.Action, Created: f.Created,
		Memory: f.Memory, Text: f.Text, Model: f.Model, Child: f.Child, Tier: f.Tier, Reason: f.Reason,
		Key: f.Key, Note: f.Note, ID: f.ID, From: f.From, Name: f.Name, Relation: f.Relation, To: f.To,
		Delivered: f.Delivered, Until: f.Until, WakeOnMessage: f.Wake,
	}
	if f.Type == EventTierChanged && f.Remaining != nil {
		e.Amount = *f.Remaining
	}
	if f.API != nil {
		e.API = *f.API
	} else {
		e.API = f.Amount
	}
	if len(f.Message) == 0 || string(f.Message) == "null" {
		return nil
	}
	if e.Type == EventWarning {
		return json.Unmarshal(f.Message, &e.Message)
	}
	var m chat.Message
	if err := json.Unmarshal(f.Message, &m); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	e.Chat = &m
	return nil
}
