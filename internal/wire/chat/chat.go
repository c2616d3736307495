// Package chat holds the OpenAI-compatible conversation shapes that Brama
// speaks (docs/brama.md#the-completion-request) and that the being keeps in
// its state: messages, tool calls, tool definitions and token usage. It is
// data only.
package chat

import "encoding/json"

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. Content is always serialized (an assistant
// message that only calls tools carries ""); the other optional fields are
// omitted when empty. A null content in a completion reads as "".
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is the model's request to run one tool.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and carries its arguments as JSON text, as
// the model produced them (they may be malformed).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one entry of the catalogue as sent to the model.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function describes a callable tool: its name, what it does, and the JSON
// Schema object of its arguments.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage is the token accounting of one completion as the runtime keeps
// it (docs/brama.md#cached-prompt-tokens): the provider's counts in one
// form, whatever form its usage block had (UsageReport). CachedTokens and
// CacheWriteTokens are parts of PromptTokens (their sum never exceeds it
// in a usage the gateway accepted); ReasoningTokens is a part of
// CompletionTokens as the provider reported it, kept for the journal and
// priced as any completion token. The three are left out of JSON when
// zero, so a usage without them is written as before.
type Usage struct {
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
	TotalTokens      uint64 `json:"total_tokens"`
	CachedTokens     uint64 `json:"cached_tokens,omitempty"`
	CacheWriteTokens uint64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  uint64 `json:"reasoning_tokens,omitempty"`
}

// UsageReport is a completion's usage block as OpenAI-compatible servers
// write it, with the forms of cached, cache-write and reasoning counts of
// docs/brama.md#cached-prompt-tokens; test gateways answer with it. A
// pointer is nil when the field is absent or null. (The gateway reads a
// block field by field, so that a quirky count is not an undecodable
// answer.)
type UsageReport struct {
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
	TotalTokens      uint64 `json:"total_tokens"`
	// PromptTokensDetails carries cached_tokens (OpenAI, and most
	// servers that follow it).
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails carries reasoning_tokens.
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	// PromptCacheHitTokens is DeepSeek's cached count.
	PromptCacheHitTokens *uint64 `json:"prompt_cache_hit_tokens,omitempty"`
	// CacheReadInputTokens and CacheCreationInputTokens are the
	// Anthropic-style counts that proxies such as LiteLLM add.
	CacheReadInputTokens     *uint64 `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens,omitempty"`
}

// PromptTokensDetails is the breakdown of a usage block's prompt tokens.
type PromptTokensDetails struct {
	CachedTokens *uint64 `json:"cached_tokens,omitempty"`
}

// CompletionTokensDetails is the breakdown of a usage block's completion
// tokens.
type CompletionTokensDetails struct {
	ReasoningTokens *uint64 `json:"reasoning_tokens,omitempty"`
}

// Report is u as an OpenAI-compatible server writes it: cached tokens in
// prompt_tokens_details, reasoning tokens in completion_tokens_details,
// cache writes as cache_creation_input_tokens (LiteLLM's form); each of
// the three only when it is not zero. Test gateways answer with it.
func (u Usage) Report() UsageReport {
	r := UsageReport{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.CachedTokens > 0 {
		r.PromptTokensDetails = &PromptTokensDetails{CachedTokens: &u.CachedTokens}
	}
	if u.ReasoningTokens > 0 {
		r.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: &u.ReasoningTokens}
	}
	if u.CacheWriteTokens > 0 {
		r.CacheCreationInputTokens = &u.CacheWriteTokens
	}
	return r
}

// NewTool returns a function tool definition.
func NewTool(name, description string, parameters json.RawMessage) Tool {
	return Tool{Type: "function", Function: Function{Name: name, Description: description, Parameters: parameters}}
}
