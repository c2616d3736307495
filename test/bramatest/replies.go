package bramatest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/wisent/singularity/internal/wire/chat"
)

// Usage returns a usage block whose total is prompt plus completion.
func Usage(prompt, completion uint64) chat.Usage {
	return chat.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// Call returns a function tool call with the given arguments text.
func Call(id, name, arguments string) chat.ToolCall {
	return chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: arguments}}
}

// Completion returns a one-choice completion body; its usage block is
// usage in OpenAI's form (chat.Usage.Report: cached tokens in
// prompt_tokens_details, and so on).
func Completion(msg ReplyMessage, finish string, usage chat.Usage) Response {
	if msg.Role == "" {
		msg.Role = chat.RoleAssistant
	}
	report := usage.Report()
	return Response{
		ID:      "chatcmpl-test",
		Object:  "chat.completion",
		Model:   "test-model",
		Choices: []Choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   &report,
	}
}

// TextReply answers with a plain assistant message, finish reason
// "stop".
func TextReply(content string, usage chat.Usage) Reply {
	return JSONReply(Completion(ReplyMessage{Content: &content}, "stop", usage))
}

// ToolCallsReply answers with tool calls and null content, finish reason
// "tool_calls", as real OpenAI-compatible servers do.
func ToolCallsReply(usage chat.Usage, calls ...chat.ToolCall) Reply {
	return JSONReply(Completion(ReplyMessage{ToolCalls: calls}, "tool_calls", usage))
}

// JSONReply answers 200 with v marshalled as the body.
func JSONReply(v any) Reply { return Reply{JSON: v} }

// RawReply answers 200 with body exactly.
func RawReply(body string) Reply { return Reply{Body: []byte(body)} }

// ErrorReply answers status with {"error":{"message":message}}.
func ErrorReply(status int, message string) Reply {
	return Reply{Status: status, JSON: map[string]any{"error": map[string]string{"message": message}}}
}

// Text returns a pointer to s, for ReplyMessage.Content.
func Text(s string) *string { return &s }

// Arguments marshals v into the JSON text of a tool call's arguments.
func Arguments(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bramatest: arguments: %v", err))
	}
	return string(b)
}

// The quirks of real OpenAI-compatible providers that the runtime accepts
// leniently from a gateway other than Brama
// (docs/brama.md#lenient-validation), one reply each.

// StopWithToolsReply asks for tools but reports finish reason "stop".
func StopWithToolsReply(usage chat.Usage, calls ...chat.ToolCall) Reply {
	return JSONReply(Completion(ReplyMessage{ToolCalls: calls}, "stop", usage))
}

// ContentFilterReply is cut off by the provider's content filter, with
// the part of a reply written before the filter cut in.
func ContentFilterReply(partial string, usage chat.Usage) Reply {
	return JSONReply(Completion(ReplyMessage{Content: &partial}, "content_filter", usage))
}

// UsageMismatchReply is a plain reply whose usage total is not prompt plus
// completion.
func UsageMismatchReply(content string, prompt, completion, total uint64) Reply {
	return TextReply(content, chat.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total})
}

// NoUsageReply is a plain reply without a usage block.
func NoUsageReply(content string) Reply {
	r := Completion(ReplyMessage{Content: &content}, "stop", chat.Usage{})
	r.Usage = nil
	return JSONReply(r)
}

// ModelReply is reply answered as model: the response's "model" field.
func ModelReply(model string, reply Reply) Reply {
	if r, ok := reply.JSON.(Response); ok {
		r.Model = model
		reply.JSON = r
	}
	return reply
}

// RetryAfterReply is status with a Retry-After header of seconds.
func RetryAfterReply(status int, seconds string) Reply {
	r := ErrorReply(status, "slow down")
	r.Header = http.Header{"Retry-After": []string{seconds}}
	return r
}
