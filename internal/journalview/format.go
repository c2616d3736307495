package journalview

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// textLimit bounds a text field (a reply, a warning, a memory) in a
// one-line summary.
const textLimit = 80

// TimeLayout is how event times are shown in text: UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Text is one event as a line of `singularity journal --format text`
// (docs/state.md#reading-the-journal): "<time> <being> <type> <fields>",
// fields as key=value, money rounded for reading (money.Amount.Human),
// long texts cut.
func Text(being string, l Line) string {
	var b strings.Builder
	b.WriteString(l.Head.At.UTC().Format(TimeLayout))
	b.WriteByte(' ')
	b.WriteString(word(being))
	b.WriteByte(' ')
	b.WriteString(word(l.Head.Type))
	if f := Fields(l); f != "" {
		b.WriteByte(' ')
		b.WriteString(f)
	}
	if l.Unjournaled {
		b.WriteString(" " + NotJournaled)
	}
	return b.String()
}

// NotJournaled ends the text line of a being's last words
// (LastWordsLine).
const NotJournaled = "(not journaled: storage failed)"

// Fields is the key=value summary of one event: seq (none for last
// words) and cycle, then what the event type says (tokens, amounts, tool
// and status, …).
func Fields(l Line) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, k+"="+word(v)) }
	if !l.Unjournaled {
		add("seq", strconv.FormatUint(l.Head.Seq, 10))
	}
	if l.Head.Type != state.EventStarted {
		add("cycle", strconv.FormatUint(l.Head.Cycle, 10))
	}
	var e state.Event
	if err := json.Unmarshal(l.Raw, &e); err != nil {
		return strings.Join(append(kv, generic(l.Raw)...), " ")
	}
	switch e.Type {
	case state.EventStarted, state.EventCycleStarted:
	case state.EventModelCompleted:
		add("prompt_tokens", strconv.FormatUint(e.Usage.PromptTokens, 10))
		add("completion_tokens", strconv.FormatUint(e.Usage.CompletionTokens, 10))
		if e.Chat != nil {
			add("tool_calls", strconv.Itoa(len(e.Chat.ToolCalls)))
			if e.Chat.Content != "" {
				add("reply", cut(e.Chat.Content))
			}
		}
	case state.EventCostDebited:
		add("amount", usd(e.Amount))
		if e.Tokens > 0 {
			add("tokens", strconv.FormatUint(e.Tokens, 10))
		}
	case state.EventToolFinished:
		add("tool", e.Tool)
		add("status", e.Status)
	case state.EventRevenueCredited:
		add("amount", usd(e.Amount))
		add("source", e.Source)
	case state.EventWarning:
		add("message", cut(e.Message))
	case state.EventStopped:
		add("status", e.Status)
		if e.Reason != "" {
			add("reason", e.Reason)
		}
	case state.EventMemoryAdded:
		if e.Memory != nil {
			add("kind", e.Memory.Kind)
			add("text", cut(e.Memory.Text))
		}
	case state.EventPromptSet, state.EventRuleAdded, state.EventLearningAdded:
		add("text", cut(e.Text))
	case state.EventModelSwitched:
		add("model", e.Model)
	case state.EventTierChanged:
		add("tier", strconv.Itoa(e.Tier))
		add("remaining", usd(e.Amount))
	case state.EventChildAdded:
		if e.Child != nil {
			add("child", e.Child.Name)
			add("child_id", e.Child.ID)
		}
	case state.EventFunded:
		add("amount", usd(e.Amount))
		add("key", e.Key)
		if e.Note != "" {
			add("note", cut(e.Note))
		}
	case state.EventMessageReceived:
		add("id", e.ID)
		add("from", e.From)
		if e.Name != "" {
			add("name", e.Name)
		}
		if e.Relation != "" {
			add("relation", e.Relation)
		}
		add("text", cut(e.Text))
	case state.EventMessageSent:
		add("id", e.ID)
		add("to", e.To)
		add("text", cut(e.Text))
	case state.EventMessageDelivered:
		add("id", e.ID)
		if e.Reason != "" {
			add("reason", e.Reason)
		}
	case state.EventSlept:
		add("until", e.Until.UTC().Format("2006-01-02T15:04:05Z"))
		add("wake_on_message", strconv.FormatBool(e.WakeOnMessage))
	default:
		kv = append(kv, generic(l.Raw)...)
	}
	if e.Type == state.EventCycleStarted && len(e.Delivered) > 0 {
		add("delivered", strings.Join(e.Delivered, ","))
	}
	return strings.Join(kv, " ")
}

// generic shows the scalar fields of an event this package does not know,
// in key order; an "amount" is money.
func generic(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "type", "seq", "at", "cycle":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kv []string
	for _, k := range keys {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
			if strings.HasSuffix(k, "amount") || strings.HasSuffix(k, "_usd") {
				if a, err := money.Parse(x); err == nil {
					v = usd(a)
				}
			}
		case json.Number:
			v = x.String()
		case bool:
			v = strconv.FormatBool(x)
		default:
			continue
		}
		kv = append(kv, k+"="+word(cut(v)))
	}
	return kv
}

// usd is an amount exactly as the journal holds it, its shortest exact
// decimal: a reader sums the lines to the ledger's figures.
func usd(a money.Amount) string { return a.String() }

// cut shortens s to textLimit characters.
func cut(s string) string {
	r := []rune(s)
	if len(r) <= textLimit {
		return s
	}
	return string(r[:textLimit]) + "…"
}

// word returns s bare when it is a plain word and Go-quoted otherwise, so
// a line splits unambiguously on spaces.
func word(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '\\' || r == '=' {
			return strconv.Quote(s)
		}
	}
	return s
}

// JSON is one event as a line of `singularity journal --format json`: the
// journal's own object, exact decimals and all, with "being" (the name)
// and "being_id" (its own id) first.
func JSON(being, id string, l Line) []byte {
	var b bytes.Buffer
	b.WriteString(`{"being":`)
	name, _ := json.Marshal(being)
	b.Write(name)
	b.WriteString(`,"being_id":`)
	raw, _ := json.Marshal(id)
	b.Write(raw)
	rest := bytes.TrimPrefix(bytes.TrimSpace(l.Raw), []byte("{"))
	if len(bytes.TrimSpace(rest)) > 1 {
		b.WriteByte(',')
	}
	b.Write(rest)
	return b.Bytes()
}
