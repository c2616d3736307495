// Package builtin implements the nine built-in tools every being has
// (docs/tools.md#built-in-tools): memory, self-modification, child spawning
// and workspace file access, and the two family tools that --family-tools
// adds (messages between relatives, sleep). The tools operate on the
// being's mind and an injected environment; they do no actor messaging
// themselves.
package builtin

import (
	"encoding/json"
	"strings"

	"github.com/wisent/singularity/internal/wire/chat"
)

// Names of the built-in tools, in catalogue order.
const (
	MemoryRemember  = "singularity_memory_remember"
	MemoryRecall    = "singularity_memory_recall"
	SelfSetPrompt   = "singularity_self_set_prompt"
	SelfAddRule     = "singularity_self_add_rule"
	SelfAddLearning = "singularity_self_add_learning"
	SelfSwitchModel = "singularity_self_switch_model"
	SpawnChild      = "singularity_spawn_child"
	FileRead        = "singularity_file_read"
	FileWrite       = "singularity_file_write"
)

// spec is one built-in tool's definition: its exact description and its
// string arguments in schema order.
type spec struct {
	name        string
	description string
	keys        []string
}

var specs = []spec{
	{MemoryRemember, "Persist a memory owned by this digital being", []string{"kind", "text"}},
	{MemoryRecall, "Recall persistent memories containing a query", []string{"query"}},
	{SelfSetPrompt, "Replace this being's persistent system prompt", []string{"prompt"}},
	{SelfAddRule, "Add a persistent self-imposed rule", []string{"rule"}},
	{SelfAddLearning, "Record a persistent learning that changes future decisions", []string{"learning"}},
	{SelfSwitchModel, "Switch future cognition calls to another available Brama model", []string{"model"}},
	{SpawnChild, "Create and start a child digital being with separate state", []string{"name", "ticker", "specialty", "endowment_usd"}},
	{FileRead, "Read one UTF-8 file inside the configured workspace", []string{"path"}},
	{FileWrite, "Atomically create or replace one UTF-8 file inside the configured workspace", []string{"path", "content"}},
}

// Definitions returns the nine built-in tool definitions in the order of
// docs/tools.md#built-in-tools. Each schema is an object of the listed string
// properties, all required, with additionalProperties false. The slice is
// fresh on every call; callers may keep or modify it.
func Definitions() []chat.Tool {
	tools := make([]chat.Tool, 0, len(specs))
	for _, s := range specs {
		tools = append(tools, chat.NewTool(s.name, s.description, stringSchema(s.keys)))
	}
	return tools
}

// stringSchema builds {"type":"object","properties":{k:{"type":"string"},…},
// "required":[…],"additionalProperties":false} with keys in the given order.
func stringSchema(keys []string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(k)
		b.Write(q)
		b.WriteString(`:{"type":"string"}`)
	}
	b.WriteString(`},"required":[`)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(k)
		b.Write(q)
	}
	b.WriteString(`],"additionalProperties":false}`)
	return json.RawMessage(b.String())
}
