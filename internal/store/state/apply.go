package state

import (
	"math"
	"slices"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Bounds the state keeps to (docs/tools.md#mind-tools,
// docs/state.md#the-state-file).
const (
	// MaxMemories is how many memories a mind keeps; older ones drop off.
	MaxMemories = 1000
	// MaxRecentActions is how many action records a being keeps.
	MaxRecentActions = 100
)

// Debit takes a priced completion from b: remaining −= api + instance,
// api_spent += api, instance_spent += instance, total_tokens += tokens
// (saturating).
func (b Budget) Debit(api, instance money.Amount, tokens uint64) Budget {
	b.Remaining = b.Remaining.Sub(api.Add(instance))
	b.APISpent = b.APISpent.Add(api)
	b.InstanceSpent = b.InstanceSpent.Add(instance)
	b.TotalTokens = AddSaturating(b.TotalTokens, tokens)
	return b
}

// Credit adds revenue v (not negative) to b: earned += v, remaining += v.
func (b Budget) Credit(v money.Amount) Budget {
	b.Earned = b.Earned.Add(v)
	b.Remaining = b.Remaining.Add(v)
	return b
}

// Grant moves an endowment out of b: remaining −= v, granted += v.
func (b Budget) Grant(v money.Amount) Budget {
	b.Remaining = b.Remaining.Sub(v)
	b.Granted = b.Granted.Add(v)
	return b
}

// Fund adds v from outside the family to b: funded += v, remaining += v.
func (b Budget) Fund(v money.Amount) Budget {
	b.Funded = b.Funded.Add(v)
	b.Remaining = b.Remaining.Add(v)
	return b
}

// AddSaturating is a + b, or the largest uint64 when that overflows.
func AddSaturating(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// Apply changes b as event e says: it is the one rule by which a living
// being changes its state (after the step holding e is durable) and by
// which a loaded checkpoint catches up with the journal. Events that
// change nothing kept (started, warning) only advance JournalSeq.
//
// A cycle_started whose conversation still ends with the previous
// cycle's framing, never answered (a cycle that failed before its first
// completion), replaces those messages instead of piling up; the inbox
// messages a framing carries leave the inbox with the first completion
// after it, so a replacing framing carries them again.
func (b *Being) Apply(e Event) {
	switch e.Type {
	case EventCycleStarted:
		b.Cycle = e.Cycle
		b.appendMessages(true, e.Messages...)
		b.Sleep = nil
		// The messages it carries stay in the inbox until the model
		// answers this framing: one replaced unanswered (a kill, a failed
		// first completion) took them nowhere, and the next carries them
		// again (docs/family.md#messages).
		b.Framed = slices.Clone(e.Delivered)
	case EventModelCompleted:
		// A billed rejection (no message) leaves the framing unanswered.
		if e.Chat != nil {
			b.appendMessages(false, *e.Chat)
			if len(b.Framed) > 0 {
				b.Inbox = slices.DeleteFunc(b.Inbox, func(m InMessage) bool { return slices.Contains(b.Framed, m.ID) })
				b.Framed = nil
			}
		}
	case EventCostDebited:
		b.Budget = b.Budget.Debit(e.API, e.Instance, e.Tokens)
	case EventToolFinished:
		if e.Chat != nil {
			b.appendMessages(false, *e.Chat)
		}
		if e.Action != nil {
			b.RecentActions = append(b.RecentActions, *e.Action)
			if over := len(b.RecentActions) - MaxRecentActions; over > 0 {
				b.RecentActions = slices.Delete(b.RecentActions, 0, over)
			}
		}
		if e.Created != nil {
			b.CreatedResources.ChatIDs = appendNew(b.CreatedResources.ChatIDs, e.Created.ChatIDs)
			b.CreatedResources.MessageIDs = appendNew(b.CreatedResources.MessageIDs, e.Created.MessageIDs)
		}
	case EventRevenueCredited:
		b.Budget = b.Budget.Credit(e.Amount)
	case EventStopped:
		b.Status = e.Status
		b.StatusReason = e.Reason
	case EventMemoryAdded:
		if e.Memory != nil {
			b.Mind.Memories = append(b.Mind.Memories, *e.Memory)
			if over := len(b.Mind.Memories) - MaxMemories; over > 0 {
				b.Mind.Memories = slices.Delete(b.Mind.Memories, 0, over)
			}
		}
	case EventPromptSet:
		b.Mind.SystemPrompt = e.Text
	case EventRuleAdded:
		b.Mind.Rules = append(b.Mind.Rules, e.Text)
	case EventLearningAdded:
		b.Mind.Learnings = append(b.Mind.Learnings, e.Text)
	case EventModelSwitched:
		b.Mind.CurrentModel = e.Model
	case EventChildAdded:
		if e.Child != nil {
			b.Mind.Children = append(b.Mind.Children, *e.Child)
			b.Grants = slices.DeleteFunc(b.Grants, func(g Grant) bool { return g.Child.ID == e.Child.ID })
		}
	case EventEndowmentGranted:
		if e.Child != nil {
			b.Budget = b.Budget.Grant(e.Amount)
			b.Grants = append(b.Grants, Grant{Child: *e.Child, Amount: e.Amount})
		}
	case EventTierChanged:
		b.Tier = e.Tier
	case EventFunded:
		b.applyFunded(e)
	case EventMessageReceived:
		if !slices.Contains(b.Received, e.ID) {
			b.Received = append(b.Received, e.ID)
			b.Inbox = append(b.Inbox, InMessage{ID: e.ID, From: e.From, Name: e.Name, Relation: e.Relation, Text: e.Text})
		}
	case EventMessageSent:
		b.Outbox = append(b.Outbox, OutMessage{ID: e.ID, To: e.To, Text: e.Text})
	case EventMessageDelivered:
		b.Outbox = slices.DeleteFunc(b.Outbox, func(m OutMessage) bool { return m.ID == e.ID })
	case EventSlept:
		b.Sleep = &Sleep{Until: e.Until, WakeOnMessage: e.WakeOnMessage}
	}
	if e.Seq > b.Seq() {
		seq := e.Seq
		b.JournalSeq = &seq
	}
}

// applyFunded applies a fund once per key. A fund to an exhausted being
// un-ends it in the same step: it is stopped, to be resumed (a live
// family wakes it at once).
func (b *Being) applyFunded(e Event) {
	if b.FundOf(e.Key) != nil {
		return
	}
	b.Budget = b.Budget.Fund(e.Amount)
	b.Funds = append(b.Funds, Fund{Key: e.Key, Amount: e.Amount, Remaining: b.Budget.Remaining})
	if b.Status == StatusExhausted {
		b.Status = StatusStopped
		b.StatusReason = ""
	}
}

// Unread is how many inbox messages no framing carries yet: the inbox
// without those of a framing the model has not answered.
func (b *Being) Unread() int { return len(b.Inbox) - len(b.Framed) }

// FundOf returns the fund applied under key, or nil.
func (b *Being) FundOf(key string) *Fund {
	for i := range b.Funds {
		if b.Funds[i].Key == key {
			return &b.Funds[i]
		}
	}
	return nil
}

// appendNew appends the ids of add that list does not hold yet.
func appendNew(list, add []string) []string {
	for _, id := range add {
		if !slices.Contains(list, id) {
			list = append(list, id)
		}
	}
	return list
}

// Seq is the seq of the last journal event the state includes (0 for
// none, or for a reference state that does not say).
func (b *Being) Seq() uint64 {
	if b.JournalSeq == nil {
		return 0
	}
	return *b.JournalSeq
}

// dropUnansweredFraming removes a trailing framing message (and the
// stimulus after it) that no assistant message answered.
func dropUnansweredFraming(conv []chat.Message) []chat.Message {
	for i := len(conv) - 1; i >= 0; i-- {
		m := conv[i]
		if m.Role != chat.RoleUser {
			return conv
		}
		if IsFraming(m) {
			return conv[:i]
		}
	}
	return conv
}

// CloseUnanswered appends, for every tool call in conv that no tool
// message answers (wherever it stands), the result that closes it: make
// returns the tool message for a call. A conversation sent to an
// OpenAI-compatible server must answer every call before anything else
// follows it, so the results are inserted right after the last tool
// message of the call's own round, not at the end. It returns the new
// conversation and how many calls it closed.
func CloseUnanswered(conv []chat.Message, make func(chat.ToolCall) chat.Message) ([]chat.Message, int) {
	answered := map[string]bool{}
	for _, m := range conv {
		if m.Role == chat.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []chat.Message
	closed := 0
	for i := 0; i < len(conv); i++ {
		m := conv[i]
		out = append(out, m)
		if m.Role != chat.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		// Copy the round's tool messages, then close what they left open.
		for i+1 < len(conv) && conv[i+1].Role == chat.RoleTool {
			i++
			out = append(out, conv[i])
		}
		for _, call := range m.ToolCalls {
			if !answered[call.ID] {
				out = append(out, make(call))
				answered[call.ID] = true
				closed++
			}
		}
	}
	if closed == 0 {
		return conv, 0
	}
	return out, closed
}

// Ungranted returns the names among dirs (the entries of children/)
// that neither a grant nor a child record of b accounts for: directories
// a spawn left before its step was durable, where no child ever lived
// (docs/money.md#funded-children).
func (b *Being) Ungranted(dirs []string) []string {
	known := make(map[string]bool, len(b.Mind.Children)+len(b.Grants))
	for _, c := range b.Mind.Children {
		known[c.ID] = true
	}
	for _, g := range b.Grants {
		known[g.Child.ID] = true
	}
	var out []string
	for _, d := range dirs {
		if !known[d] {
			out = append(out, d)
		}
	}
	return out
}
