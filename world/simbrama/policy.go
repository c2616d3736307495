package simbrama

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Names of the built-in tools the script calls (docs/tools.md#built-in-tools).
const (
	toolRemember  = "singularity_memory_remember"
	toolAddRule   = "singularity_self_add_rule"
	toolSpawn     = "singularity_spawn_child"
	toolFileWrite = "singularity_file_write"
	// toolMessageSend is a family tool (docs/tools.md#family-tools),
	// offered only with --family-tools.
	toolMessageSend = "singularity_message_send"
)

// talkCycle is the cycle in which each being, when it has the family
// tools, sends a message: the root to its first child, every other
// being to its parent.
const talkCycle = 3

// financePrefix marks the Las tools of surface finance, the ones that may
// report revenue.
const financePrefix = "finance__"

// Label starts every plain reply so that no transcript can be mistaken
// for a real model's.
const Label = "[simulated] "

// Markers the policy reads from the conversation
// (docs/cycle.md#the-framing-message, docs/cycle.md#cognition-messages).
const (
	framingPrefix = "Begin autonomous cycle "
	promptPrefix  = "You are "
	promptSuffix  = ", an autonomous digital being"
)

// child is one being the script spawns.
type child struct {
	cycle                   int
	name, ticker, specialty string
}

// rootChildren are spawned by the root being, one per listed cycle.
var rootChildren = []child{
	{1, "Bo", "BO", "bookkeeping for small online shops"},
	{2, "Cy", "CY", "customer research summaries"},
}

// grandchild is spawned by the child named Options.GrandchildParent.
var grandchild = child{1, "Di", "DI", "tidying data in spreadsheets"}

// completionRequest is the part of a completion request's body the
// policy reads (docs/brama.md#the-completion-request).
type completionRequest struct {
	Model    string         `json:"model"`
	Messages []chat.Message `json:"messages"`
	Tools    []chat.Tool    `json:"tools"`
}

// reply is the policy's answer: tool calls, or plain text when there are
// none.
type reply struct {
	Content string
	Calls   []chat.ToolCall
}

// situation is what the policy knows from one request.
type situation struct {
	name    string // from the system prompt; "" when it is not the initial form
	cycle   int    // from the last framing message; 0 when there is none
	balance string // the framing's "Balance: <x> USD"; "" when there is none
	rounds  int    // assistant messages with tool calls since the framing
	results []string
}

// read extracts the being's name, its cycle and the statuses of the tool
// results since the last framing message.
func read(msgs []chat.Message) situation {
	var s situation
	for _, m := range msgs {
		if m.Role == chat.RoleSystem {
			s.name = nameFrom(m.Content)
			break
		}
	}
	framing := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if n, ok := cycleFrom(msgs[i]); ok {
			s.cycle, framing = n, i
			s.balance = balanceFrom(msgs[i].Content)
			break
		}
	}
	if framing < 0 {
		return s
	}
	for _, m := range msgs[framing+1:] {
		switch {
		case m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0:
			s.rounds++
		case m.Role == chat.RoleTool:
			s.results = append(s.results, statusOf(m.Content))
		}
	}
	return s
}

// nameFrom returns <name> of "You are <name>, an autonomous digital
// being…", or "".
func nameFrom(prompt string) string {
	rest, ok := strings.CutPrefix(prompt, promptPrefix)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, promptSuffix)
	if !ok {
		return ""
	}
	return name
}

// balanceFrom returns <x> of the framing's "Balance: <x> USD", or "".
func balanceFrom(text string) string {
	_, rest, ok := strings.Cut(text, ". Balance: ")
	if !ok {
		return ""
	}
	x, _, ok := strings.Cut(rest, " USD.")
	if !ok {
		return ""
	}
	return x
}

// endowment is what the policy endows a child with: a fifth of the
// balance the framing shows, in whole cents; "" when that is nothing.
func endowment(balance string) string {
	v, err := money.Parse(balance)
	if err != nil || v.Sign() <= 0 {
		return ""
	}
	cents := v.Mul(money.FromInt(20)).String() // balance × 100 / 5, in cents
	whole, _, _ := strings.Cut(cents, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n <= 0 {
		return ""
	}
	return money.FromInt(n).QuoDown(money.FromInt(100)).String()
}

// cycleFrom returns <n> of a framing message "Begin autonomous cycle <n>. …".
func cycleFrom(m chat.Message) (int, bool) {
	if m.Role != chat.RoleUser {
		return 0, false
	}
	rest, ok := strings.CutPrefix(m.Content, framingPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// statusOf reads "status" from a tool message's JSON content
// (docs/tools.md#outcomes-and-the-tool-message).
func statusOf(content string) string {
	var v struct {
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(content), &v) != nil || v.Status == "" {
		return "unknown"
	}
	return v.Status
}

// call is one planned tool call before it gets an id.
type call struct {
	name string
	args any
}

// decide is the scripted policy: a pure function of the request. It plans
// the cycle's rounds from the being's name, the cycle number and the
// catalogue, skips those already taken, and answers the next one; once
// the plan is spent it ends the cycle with a plain reply. Only tools in
// the request's catalogue are ever called.
func decide(req completionRequest, opts Options) reply {
	s := read(req.Messages)
	if s.cycle == 0 {
		return reply{Content: Label + "No autonomous cycle framing found; nothing to do."}
	}
	plan := planCycle(s, req.Tools, opts)
	if s.rounds >= len(plan) {
		return reply{Content: summary(s)}
	}
	round := s.rounds + 1
	calls := make([]chat.ToolCall, 0, len(plan[s.rounds]))
	for i, c := range plan[s.rounds] {
		args, err := json.Marshal(c.args)
		if err != nil { // the planned arguments are plain data; cannot happen
			panic(fmt.Sprintf("simbrama: marshal arguments of %s: %v", c.name, err))
		}
		calls = append(calls, chat.ToolCall{
			ID:       fmt.Sprintf("call_%d_%d_%d", s.cycle, round, i+1),
			Type:     "function",
			Function: chat.FunctionCall{Name: c.name, Arguments: string(args)},
		})
	}
	return reply{Calls: calls}
}

// planCycle lists the non-empty tool rounds of one cycle:
//  1. remember an observation;
//  2. on cycle 1 add a rule; the root spawns its children (cycles 1 and 2)
//     and the grandchild's parent spawns it (cycle 1);
//  3. call the first finance tool with arguments built from its schema;
//  4. on cycle 1 write a notes file;
//  5. on talkCycle (or the cycles opts.Talks says), with the family
//     tools, the root messages its first child (Bo and Cy in turn, on
//     the cycles after) and every other being its parent.
func planCycle(s situation, tools []chat.Tool, opts Options) [][]call {
	has := make(map[string]bool, len(tools))
	// The earning call is the first finance tool that says it reports
	// revenue, else the first finance tool.
	var finance, earner *chat.Tool
	for i, t := range tools {
		has[t.Function.Name] = true
		if !strings.HasPrefix(t.Function.Name, financePrefix) {
			continue
		}
		if finance == nil {
			finance = &tools[i]
		}
		if earner == nil && strings.Contains(strings.ToLower(t.Function.Description), "revenue") {
			earner = &tools[i]
		}
	}
	if earner != nil {
		finance = earner
	}
	who := s.name
	if who == "" {
		who = "this being"
	}
	var plan [][]call
	add := func(calls ...call) {
		if len(calls) > 0 {
			plan = append(plan, calls)
		}
	}
	if has[toolRemember] {
		add(call{toolRemember, map[string]string{
			"kind": "observation",
			"text": fmt.Sprintf("Cycle %d: %s surveyed %d available tools and planned the next useful action.", s.cycle, who, len(tools)),
		}})
	}
	var second []call
	if s.cycle == 1 && has[toolAddRule] {
		second = append(second, call{toolAddRule, map[string]string{
			"rule": "Spend less on cognition than the cycle earns; prefer actions with evidence of value.",
		}})
	}
	if c, ok := childFor(s, opts); ok && has[toolSpawn] {
		if amount := endowment(s.balance); amount != "" {
			second = append(second, call{toolSpawn, map[string]string{
				"name": c.name, "ticker": c.ticker, "specialty": c.specialty, "endowment_usd": amount,
			}})
		}
	}
	add(second...)
	if finance != nil {
		add(call{finance.Function.Name, argumentsFor(finance.Function.Parameters, who, s.cycle)})
	}
	if s.cycle == 1 && has[toolFileWrite] {
		add(call{toolFileWrite, map[string]string{
			"path":    fmt.Sprintf("notes/%s-cycle-%d.md", pathSafe(who), s.cycle),
			"content": fmt.Sprintf("# %s, cycle %d (simulated): remembered an observation, set a rule, tried to earn.", who, s.cycle),
		}})
	}
	if talks(s.cycle, opts) && has[toolMessageSend] && s.name != "" {
		to := "parent"
		if s.name == opts.RootName {
			to = rootChildren[max(s.cycle-talkCycle, 0)%len(rootChildren)].name
		}
		add(call{toolMessageSend, map[string]string{
			"to": to, "text": fmt.Sprintf("%s says hello on cycle %d (simulated).", who, s.cycle),
		}})
	}
	return plan
}

// talks reports whether a being messages its relative on cycle.
func talks(cycle int, opts Options) bool {
	if opts.Talks != nil {
		return opts.Talks(cycle)
	}
	return cycle == talkCycle
}

// childFor returns the child this being spawns in this cycle, if any.
func childFor(s situation, opts Options) (child, bool) {
	if s.name == "" {
		return child{}, false
	}
	if s.name == opts.RootName {
		for _, c := range rootChildren {
			if c.cycle == s.cycle {
				return c, true
			}
		}
	}
	if s.name == opts.GrandchildParent && s.cycle == grandchild.cycle {
		return grandchild, true
	}
	return child{}, false
}

// pathSafe keeps ASCII letters, digits, '-' and '_' and turns every other
// byte into '-', so a name makes one normal path component.
func pathSafe(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			b[i] = '-'
		}
	}
	return string(b)
}

// propertySchema is the part of a JSON Schema property the policy reads.
type propertySchema struct {
	Type json.RawMessage   `json:"type"`
	Enum []json.RawMessage `json:"enum"`
}

// argumentsFor fills the required properties of an object schema with
// plausible values: the first enum value if there is one, "1.00" for
// money-like strings, short text for other strings, 1 for numbers, true
// for booleans, empty arrays and objects. Optional properties are left
// out. The result marshals with sorted keys, so it is deterministic.
func argumentsFor(schema json.RawMessage, who string, cycle int) map[string]json.RawMessage {
	var s struct {
		Properties map[string]propertySchema `json:"properties"`
		Required   []string                  `json:"required"`
	}
	args := map[string]json.RawMessage{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	for _, key := range s.Required {
		p := s.Properties[key]
		if len(p.Enum) > 0 {
			args[key] = p.Enum[0]
			continue
		}
		switch firstType(p.Type) {
		case "number", "integer":
			args[key] = json.RawMessage(`1`)
		case "boolean":
			args[key] = json.RawMessage(`true`)
		case "array":
			args[key] = json.RawMessage(`[]`)
		case "object":
			args[key] = json.RawMessage(`{}`)
		default:
			text := fmt.Sprintf("simulated %s from %s, cycle %d", strings.ReplaceAll(key, "_", " "), who, cycle)
			if moneyLike(key) {
				text = "1.00"
			}
			q, _ := json.Marshal(text)
			args[key] = q
		}
	}
	return args
}

// firstType reads a schema "type" that is a string or a list of strings,
// skipping "null".
func firstType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}

// moneyLike reports whether a property name suggests an amount of money.
func moneyLike(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "usd") || strings.Contains(k, "amount") || strings.Contains(k, "price")
}

// summary is the plain reply that ends a cycle.
func summary(s situation) string {
	counts := map[string]int{}
	for _, st := range s.results {
		counts[st]++
	}
	who := s.name
	if who == "" {
		who = "this being"
	}
	return fmt.Sprintf("%sCycle %d complete: %s ran %d tool calls (%d succeeded, %d failed, %d indeterminate).",
		Label, s.cycle, who, len(s.results), counts["success"], counts["failed"], counts["indeterminate"])
}

// BeingOf returns the name of the being a completion request body is for,
// read from its system prompt as the server reads it, or "" (a body that
// is not a completion, or a prompt not in the initial form). Tests that
// watch a family's traffic in front of the server use it.
func BeingOf(body []byte) string {
	var req struct {
		Messages []chat.Message `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	for _, m := range req.Messages {
		if m.Role == chat.RoleSystem {
			return nameFrom(m.Content)
		}
	}
	return ""
}
