package brama

import (
	"encoding/json"
	"math"
	"time"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision"
)

// Finish reasons Brama may report.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// Params is one completion to ask for. AgentID is signed into the request;
// MaxTokens and Temperature come from configuration.
type Params struct {
	AgentID     string
	Model       string
	Messages    []chat.Message
	Tools       []chat.Tool
	MaxTokens   int
	Temperature float64
}

// Completion is a completion that passed every check of
// docs/brama.md#response-validation.
type Completion struct {
	// Message is the assistant message; Content is "" when Brama sent
	// none or null.
	Message chat.Message
	// FinishReason is "stop", "tool_calls" or "length".
	FinishReason string
	// Usage always satisfies Total = Prompt + Completion: a zero total
	// from Brama is recomputed.
	Usage chat.Usage
	// Truncated reports a "length" finish: the caller journals the
	// warning `completion truncated at max tokens` and runs the calls,
	// whose truncated arguments fail on their own.
	Truncated bool
	// Elapsed is how long the HTTP exchange took, from sending the
	// request to reading the whole response.
	Elapsed time.Duration
}

// requestBody is the completion body of docs/brama.md#the-completion-request,
// in its field order. Tools are omitted when there are none, since
// OpenAI-compatible servers reject an empty tools array.
type requestBody struct {
	Model       string         `json:"model"`
	Messages    []chat.Message `json:"messages"`
	MaxTokens   int            `json:"max_tokens"`
	Temperature float64        `json:"temperature"`
	Tools       []chat.Tool    `json:"tools,omitempty"`
}

// responseBody is the part of an OpenAI-compatible completion the runtime
// reads. Pointers tell an absent or null field from a zero one.
type responseBody struct {
	Choices []struct {
		Message struct {
			Content   *string         `json:"content"`
			ToolCalls []chat.ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chat.Usage `json:"usage"`
}

// permanent returns a permanent Brama error with the given message.
func permanent(format string, args ...any) error {
	return supervision.Upstream(supervision.ClassBrama, supervision.Permanent, format, args...)
}

// parseCompletion decodes and validates a 2xx completion body
// (docs/brama.md#response-validation). Every failure is permanent: retrying
// would get the same answer.
func parseCompletion(body []byte) (Completion, error) {
	var r responseBody
	if err := json.Unmarshal(body, &r); err != nil {
		return Completion{}, permanent("invalid completion response: %w", err)
	}
	if len(r.Choices) != 1 {
		return Completion{}, permanent("response must contain exactly one choice")
	}
	choice := r.Choices[0]
	if choice.FinishReason == nil {
		return Completion{}, permanent("invalid completion response: missing finish_reason")
	}
	calls := choice.Message.ToolCalls
	reason := *choice.FinishReason
	switch reason {
	case FinishToolCalls:
		if len(calls) == 0 {
			return Completion{}, permanent("tool_calls finish reason without calls")
		}
	case FinishStop:
		if len(calls) != 0 {
			return Completion{}, permanent("stop finish reason with tool calls")
		}
	case FinishLength:
	default:
		return Completion{}, permanent("unsupported finish reason: %s", reason)
	}
	if r.Usage == nil {
		return Completion{}, permanent("invalid completion response: missing usage")
	}
	usage, err := checkUsage(*r.Usage)
	if err != nil {
		return Completion{}, err
	}
	msg := chat.Message{Role: chat.RoleAssistant, ToolCalls: calls}
	if choice.Message.Content != nil {
		msg.Content = *choice.Message.Content
	}
	return Completion{
		Message:      msg,
		FinishReason: reason,
		Usage:        usage,
		Truncated:    reason == FinishLength,
	}, nil
}

// checkUsage refuses a non-zero total that is not prompt plus completion,
// and fills in a zero total (saturating, so accounting never wraps).
func checkUsage(u chat.Usage) (chat.Usage, error) {
	sum, overflow := u.PromptTokens+u.CompletionTokens, false
	if sum < u.PromptTokens {
		sum, overflow = math.MaxUint64, true
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = sum
		return u, nil
	}
	if overflow || u.TotalTokens != sum {
		return chat.Usage{}, permanent("usage total does not match prompt plus completion")
	}
	return u, nil
}
