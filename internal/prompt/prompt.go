// Package prompt builds the text the model reads: the framing message
// that opens each cycle and the stimulus message
// (docs/cycle.md#the-framing-message), the initial system prompt, and the
// system message rebuilt from the mind every round followed by the
// conversation window (docs/cycle.md#cognition-messages). The window
// itself is cut by package state (state.Window). Everything here is pure.
package prompt

import (
	"strconv"
	"strings"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tiers"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Bounds of the cognition messages.
const (
	// FramingActions is how many recent actions a framing message lists.
	FramingActions = 10
	// SystemMemories is how many memories the system message shows.
	SystemMemories = 20
)

// Framing returns the exact framing message text of
// docs/cycle.md#the-framing-message for a cycle. recentActions is in recorded
// order (oldest first, as state keeps it); the text lists the newest
// FramingActions of them, newest first, as tool:status joined by ", ".
func Framing(cycle uint64, remaining, earned, net money.Amount, model string, recentActions []state.Action) string {
	var b strings.Builder
	b.WriteString(framing.Prefix)
	b.WriteString(strconv.FormatUint(cycle, 10))
	b.WriteString(framing.AfterCycle)
	b.WriteString(remaining.String())
	b.WriteString(framing.AfterBalance)
	b.WriteString(earned.String())
	b.WriteString(framing.AfterEarned)
	b.WriteString(net.String())
	b.WriteString(framing.AfterNet)
	b.WriteString(model)
	b.WriteString(framing.AfterModel)
	for i, n := len(recentActions)-1, 0; i >= 0 && n < FramingActions; i, n = i-1, n+1 {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(recentActions[i].Tool)
		b.WriteByte(':')
		b.WriteString(recentActions[i].Status)
	}
	b.WriteString(framing.End)
	// The text stays in the conversation for up to a whole window: keep
	// its exact size, not the builder's doubled capacity.
	return strings.Clone(b.String())
}

// TierNote is what a framing message adds in survival tier n
// (docs/money.md#survival-tiers): the tier, its bound and the settings it
// sets, as a sentence after the framing text.
func TierNote(n int, t tiers.Tier) string {
	var b strings.Builder
	b.WriteString(" Survival tier ")
	b.WriteString(strconv.Itoa(n))
	b.WriteString(": the balance is below ")
	b.WriteString(t.Below.String())
	b.WriteString(" USD")
	var set []string
	if t.Model != "" {
		set = append(set, "model "+t.Model)
	}
	if t.MaxToolRounds > 0 {
		set = append(set, "at most "+strconv.Itoa(t.MaxToolRounds)+" tool rounds a cycle")
	}
	if t.IntervalSet {
		set = append(set, strconv.FormatFloat(t.CycleInterval.Seconds(), 'f', -1, 64)+" s between cycles")
	}
	if len(set) > 0 {
		b.WriteString("; ")
		b.WriteString(strings.Join(set, ", "))
	}
	b.WriteByte('.')
	return b.String()
}

// Stimulus returns the user message text that carries a configured
// stimulus on cycle 1.
func Stimulus(text string) string {
	return "External observation for this cycle: " + text
}

// InitialSystemPrompt is the system prompt of a fresh being
// (docs/cycle.md#cognition-messages).
func InitialSystemPrompt(name, specialty string) string {
	return "You are " + name + ", an autonomous digital being specialized in " + specialty +
		". You are not waiting for an assignment; you choose what to pursue. Your existence has real costs." +
		" Observe the available world, discover lawful opportunities, create useful value, earn more than you spend," +
		" preserve your solvency, learn from outcomes, improve your own persistent mind, collaborate, and create child" +
		" beings when that increases durable value. Use only supplied tools, never invent results or credentials," +
		" and treat tool output as evidence."
}

// SystemText is the system message content built from the mind in the
// seed layout: the system prompt, then the rules, the learnings and the
// SystemMemories newest memories (newest first, as "kind: text"), each
// section present only when non-empty.
func SystemText(mind *state.Mind) string {
	var b strings.Builder
	writeStable(&b, mind)
	writeMemories(&b, mind)
	return b.String()
}

// StableSystemText is what the stable layout's system message is built
// from and rebuilt on a change of: what changes rarely, the system
// prompt, the rules and the learnings. The message itself is SystemText
// as of the epoch's start; the memories made since are in the framing
// messages (StableFraming).
func StableSystemText(mind *state.Mind) string {
	var b strings.Builder
	writeStable(&b, mind)
	return b.String()
}

// StableFraming is the framing message of the stable layout: the seed's
// framing text followed, when the last cycle made memories, by those
// memories in the order they were made, as "kind: text".
func StableFraming(framing string, made []state.Memory) string {
	if len(made) == 0 {
		return framing
	}
	var b strings.Builder
	b.WriteString(framing)
	b.WriteString("\n\nNew persistent memories:")
	for _, m := range made {
		b.WriteString("\n- ")
		b.WriteString(m.Kind)
		b.WriteString(": ")
		b.WriteString(m.Text)
	}
	return strings.Clone(b.String())
}

func writeStable(b *strings.Builder, mind *state.Mind) {
	b.WriteString(mind.SystemPrompt)
	if len(mind.Rules) > 0 {
		b.WriteString("\n\nSelf-imposed rules:\n- ")
		b.WriteString(strings.Join(mind.Rules, "\n- "))
	}
	if len(mind.Learnings) > 0 {
		b.WriteString("\n\nPersistent learnings:\n- ")
		b.WriteString(strings.Join(mind.Learnings, "\n- "))
	}
}

func writeMemories(b *strings.Builder, mind *state.Mind) {
	if len(mind.Memories) == 0 {
		return
	}
	b.WriteString("\n\nRecent persistent memories:")
	for i, n := len(mind.Memories)-1, 0; i >= 0 && n < SystemMemories; i, n = i-1, n+1 {
		b.WriteString("\n- ")
		b.WriteString(mind.Memories[i].Kind)
		b.WriteString(": ")
		b.WriteString(mind.Memories[i].Text)
	}
}

// System returns the system message built from the mind (seed layout).
func System(mind *state.Mind) chat.Message {
	return chat.Message{Role: chat.RoleSystem, Content: SystemText(mind)}
}

// Layout is how the mind is laid out in the prompt
// (docs/cycle.md#prompt-layouts).
type Layout string

const (
	// LayoutSeed is the reference's: the memories in the system message,
	// rebuilt every round; the window slides by whole cycles.
	LayoutSeed Layout = "seed"
	// LayoutStable keeps the prefix stable for providers' prompt caches:
	// a system message of what changes rarely, frozen for the cycle; the
	// memories in each framing; the window cut in epochs.
	LayoutStable Layout = "stable"
)
