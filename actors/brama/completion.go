package brama

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// Finish reasons a gateway may report.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// The warnings of lenient validation (docs/brama.md#lenient-validation),
// journaled by the being, byte for byte.
const (
	WarnStopWithTools  = "completion finished with stop but asked for tools"
	WarnContentFilter  = "completion stopped by the provider's content filter"
	WarnUsageMismatch  = "usage total does not match prompt plus completion"
	WarnNoUsageCharged = "completion reported no usage; charged its reservation"
	WarnUsageCapped    = "completion reported implausible usage; capped at 4 tokens per request byte and 4 times max_tokens"
	WarnCacheCounts    = "completion reported inconsistent cache counts; debited at their larger reading"
	WarnNoPromptCharge = "completion reported no prompt tokens; charged its reservation"
)

// plausibleFactor bounds the usage a completion may report
// (docs/brama.md#implausible-usage): no more prompt tokens than this many
// per request byte, no more completion tokens than this many times
// max_tokens.
const plausibleFactor = 4

// Params is one completion to ask for. AgentID is signed into the request
// (Brama); BeingID, the being's own id, is its prompt_cache_key when the
// client sends one; MaxTokens and Temperature come from configuration.
type Params struct {
	AgentID  string
	BeingID  string
	Model    string
	Messages []chat.Message
	// Encoded are messages sent after Messages as they are: each one JSON
	// value as encoding/json writes a chat.Message.
	Encoded state.Encoded
	Tools   []chat.Tool
	// ToolsEncoded, when set, is Tools as encoding/json writes them,
	// sent in their place as it is.
	ToolsEncoded json.RawMessage
	MaxTokens    int
	Temperature  float64
}

// Completion is a completion that passed every check of
// docs/brama.md#response-validation (strict for Brama, lenient for other
// gateways).
type Completion struct {
	// Message is the assistant message; Content is "" when the gateway
	// sent none or null, or when a content filter stopped it.
	Message chat.Message
	// FinishReason is "stop", "tool_calls" or "length" (and, leniently,
	// "content_filter").
	FinishReason string
	// Model is the model the response names ("" when it names none): it
	// picks the per-model price (docs/brama.md#per-model-prices).
	Model string
	// Usage always satisfies Total = Prompt + Completion: a zero total is
	// recomputed. Leniently, a total that differs from the sum has its
	// excess counted as completion tokens (the larger count is debited),
	// and a missing block is ReservationUsage (NoUsage). Inconsistent
	// cache counts are their larger reading, and a block without prompt
	// tokens is charged the reservation. Its cached and cache-write tokens
	// together never exceed its prompt tokens
	// (docs/brama.md#cached-prompt-tokens).
	Usage chat.Usage
	// NoUsage reports a lenient completion without a usage block: Usage is
	// the reservation's token bound, not the gateway's count.
	NoUsage bool
	// PromptReserved reports that Usage's prompt tokens are the
	// reservation's byte bound, the gateway having reported none (NoUsage,
	// or a block without prompt tokens): the caller, which reserved a
	// tighter prompt bound, charges that one (docs/money.md#no-overdraft).
	PromptReserved bool
	// Billed is set with an error: the refused completion carried a
	// readable usage block, which the gateway billed, and Usage holds
	// what it is debited, as another gateway's completion would be
	// (docs/brama.md#billed-rejections). The caller debits it before
	// handling the error.
	Billed bool
	// Truncated reports a "length" finish: the caller journals the
	// warning `completion truncated at max tokens` and runs the calls,
	// whose truncated arguments fail on their own.
	Truncated bool
	// Warnings are the lenient-validation warnings, in the order of
	// docs/brama.md#lenient-validation, for the caller to journal.
	Warnings []string
	// Elapsed is how long the exchange took, from sending the first
	// attempt to reading the whole response (retry waits included).
	Elapsed time.Duration
	// Attempts is how many times the request was sent (1 without
	// retries); set on errors too.
	Attempts int
	// RequestBytes is the size of the request body.
	RequestBytes int
}

// requestBody is the completion body of docs/brama.md#the-completion-request,
// in its field order; max tokens sits under one of two names
// (BRAMA_MAX_TOKENS_FIELD), the other is left out. Tools are omitted when
// there are none, since OpenAI-compatible servers reject an empty tools
// array.
type requestBody struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         float64         `json:"temperature"`
	Tools               []chat.Tool     `json:"tools,omitempty"`
	PromptCacheKey      string          `json:"prompt_cache_key,omitempty"`
}

// responseBody is the part of an OpenAI-compatible completion the runtime
// reads. Pointers tell an absent or null field from a zero one; the usage
// block is kept as it came, for readUsage.
type responseBody struct {
	Model   string
	Choices []responseChoice
	Usage   json.RawMessage
}

// responseChoice is one choice of a completion.
type responseChoice struct {
	Message struct {
		Content   *string         `json:"content"`
		ToolCalls []chat.ToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

// decodeResponse decodes a completion body by the exact names of its
// fields, as the provider wrote them. A body that is a JSON object keeps
// its usage block even when another field does not decode, so that its
// refusal can be billed (docs/brama.md#billed-rejections).
func decodeResponse(body []byte) (responseBody, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return responseBody{}, err
	}
	r := responseBody{Usage: top["usage"]}
	if raw := top["model"]; !absent(raw) {
		if err := json.Unmarshal(raw, &r.Model); err != nil {
			return r, err
		}
	}
	if raw := top["choices"]; !absent(raw) {
		if err := json.Unmarshal(raw, &r.Choices); err != nil {
			return r, err
		}
	}
	return r, nil
}

// permanent returns a permanent Brama error with the given message.
func permanent(format string, args ...any) error {
	return fault.Upstream(fault.ClassBrama, fault.Permanent, format, args...)
}

// ReservationUsage is the token count a completion is charged when a
// gateway reports no usage (docs/brama.md#charging-without-usage): every request byte
// as a prompt token (a tokenizer never yields more tokens than the bytes it
// reads) and max tokens as completion tokens. Priced by the ledger like any
// usage, it is max tokens at the output price plus the request bytes at the
// input price: the token part of the reservation, which the reservation
// code can price the same way.
func ReservationUsage(requestBytes, maxTokens int) chat.Usage {
	p, c := uint64(max(requestBytes, 0)), uint64(max(maxTokens, 0))
	return chat.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// parseCompletion decodes and validates a 2xx completion body
// (docs/brama.md#response-validation). Every failure is permanent: retrying
// would get the same answer. lenient applies the rules for gateways other
// than Brama; reservation is what a lenient completion without usage is
// charged. A failure whose body still holds a readable usage block
// returns what it is debited, with Billed set.
func parseCompletion(body []byte, lenient bool, reservation chat.Usage) (Completion, error) {
	r, err := decodeResponse(body)
	if err != nil {
		err = permanent("invalid completion response: %w", err)
	} else {
		var comp Completion
		if comp, err = validate(&r, lenient, reservation); err == nil {
			return comp, nil
		}
	}
	return billedUsage(r, reservation), err
}

// settlement is what one usage block is debited
// (docs/brama.md#lenient-validation).
type settlement struct {
	// usage is what the completion is debited, accepted leniently or
	// refused strictly, with the lenient warnings in order.
	usage    chat.Usage
	warnings []string
	// promptReserved: the block reported no prompt tokens, and usage
	// holds the reservation's.
	promptReserved bool
	// refusal is strict validation's first refusal of the block (nil
	// when it has none).
	refusal error
}

// settle prices a usage block for its debit: a total that is not prompt
// plus completion gives way to the larger count, inconsistent cache
// counts to their larger reading (reading.priced), and a count no request
// could have cost to its cap (capUsage), or, when the block reports no
// prompt tokens, to the reservation (reservedUsage). Strict validation
// refuses each of these, and the refusal is debited the same.
func settle(read reading, reservation chat.Usage) settlement {
	var s settlement
	u, err := checkUsage(read.priced())
	if err != nil {
		s.refusal = err
		u = largerUsage(read.priced())
		s.warnings = append(s.warnings, WarnUsageMismatch)
	}
	if read.why != "" {
		if s.refusal == nil {
			s.refusal = permanent("inconsistent usage: %s", read.why)
		}
		s.warnings = append(s.warnings, WarnCacheCounts)
	}
	if why := implausible(u, reservation); why != "" {
		if s.refusal == nil {
			s.refusal = permanent("inconsistent usage: %s", why)
		}
		if u.PromptTokens == 0 {
			u = reservedUsage(u, reservation)
			s.warnings = append(s.warnings, WarnNoPromptCharge)
			s.promptReserved = true
		} else {
			u = capUsage(u, reservation)
			s.warnings = append(s.warnings, WarnUsageCapped)
		}
	}
	s.usage = u
	return s
}

// reservedUsage is what a usage block that reports no prompt tokens is
// charged: the reservation (every request byte as a prompt token and
// max_tokens as completion tokens, docs/brama.md#charging-without-usage),
// with the block's completion tokens in place of max_tokens when they are
// more, capped as in capUsage, so that the charge is never below what the
// block itself bills.
func reservedUsage(u, reservation chat.Usage) chat.Usage {
	r := reservation
	c, m := u.CompletionTokens, r.CompletionTokens
	if m > 0 {
		c = min(c, m*plausibleFactor)
	}
	if c > m {
		r.CompletionTokens = c
		r.TotalTokens = addSat(r.PromptTokens, c)
	}
	return r
}

// implausible says how usage exceeds what the request could have cost
// (more prompt tokens than plausibleFactor per request byte, none at all
// for a request of some bytes, or more completion tokens than
// plausibleFactor times max_tokens; reservation holds the bytes and
// max_tokens), or "" when it does not. A zero part of the reservation
// bounds nothing.
func implausible(u chat.Usage, reservation chat.Usage) string {
	b, m := reservation.PromptTokens, reservation.CompletionTokens
	switch {
	case b > 0 && u.PromptTokens > b*plausibleFactor:
		return fmt.Sprintf("%d prompt tokens for a request of %d bytes", u.PromptTokens, b)
	case b > 0 && u.PromptTokens == 0:
		return fmt.Sprintf("0 prompt tokens for a request of %d bytes", b)
	case m > 0 && u.CompletionTokens > m*plausibleFactor:
		return fmt.Sprintf("%d completion tokens for max_tokens %d", u.CompletionTokens, m)
	}
	return ""
}

// capUsage is u with each count at most what implausible allows; the
// parts of a capped count (cached and cache-write tokens of the prompt,
// reasoning tokens of the completion) are capped to fit in it.
func capUsage(u chat.Usage, reservation chat.Usage) chat.Usage {
	if b := reservation.PromptTokens; b > 0 {
		u.PromptTokens = min(u.PromptTokens, b*plausibleFactor)
		u.CachedTokens = min(u.CachedTokens, u.PromptTokens)
		u.CacheWriteTokens = min(u.CacheWriteTokens, u.PromptTokens-u.CachedTokens)
	}
	if m := reservation.CompletionTokens; m > 0 {
		u.CompletionTokens = min(u.CompletionTokens, m*plausibleFactor)
		u.ReasoningTokens = min(u.ReasoningTokens, u.CompletionTokens)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// billedUsage is the Completion of a refusal: what its usage block is
// debited (settle), with Billed, when the block can be read; else
// nothing.
func billedUsage(r responseBody, reservation chat.Usage) Completion {
	if absent(r.Usage) {
		return Completion{}
	}
	read, err := readUsage(r.Usage)
	if err != nil {
		return Completion{}
	}
	s := settle(read, reservation)
	return Completion{Usage: s.usage, Billed: true, Model: r.Model, PromptReserved: s.promptReserved}
}

// validate applies docs/brama.md#response-validation to a decoded body.
func validate(r *responseBody, lenient bool, reservation chat.Usage) (Completion, error) {
	if len(r.Choices) != 1 {
		return Completion{}, permanent("response must contain exactly one choice")
	}
	choice := r.Choices[0]
	if choice.FinishReason == nil {
		return Completion{}, permanent("invalid completion response: missing finish_reason")
	}
	var warnings []string
	calls := choice.Message.ToolCalls
	content := choice.Message.Content
	reason := *choice.FinishReason
	switch reason {
	case FinishToolCalls:
		if len(calls) == 0 {
			return Completion{}, permanent("tool_calls finish reason without calls")
		}
	case FinishStop:
		if len(calls) != 0 {
			if !lenient {
				return Completion{}, permanent("stop finish reason with tool calls")
			}
			warnings = append(warnings, WarnStopWithTools)
		}
	case FinishLength:
	case FinishContentFilter:
		if !lenient {
			return Completion{}, permanent("unsupported finish reason: %s", reason)
		}
		// Whatever came before the filter cut in is withheld: the
		// reply is empty and ends the cycle.
		warnings = append(warnings, WarnContentFilter)
		calls, content = nil, nil
	default:
		return Completion{}, permanent("unsupported finish reason: %s", reason)
	}
	var usage chat.Usage
	noUsage, promptReserved := false, false
	switch {
	case absent(r.Usage) && lenient:
		usage, noUsage, promptReserved = reservation, true, true
		warnings = append(warnings, WarnNoUsageCharged)
	case absent(r.Usage):
		return Completion{}, permanent("invalid completion response: missing usage")
	default:
		read, err := readUsage(r.Usage)
		if err != nil {
			return Completion{}, permanent("invalid completion response: %w", err)
		}
		s := settle(read, reservation)
		if s.refusal != nil && !lenient {
			return Completion{}, s.refusal
		}
		usage, promptReserved = s.usage, s.promptReserved
		warnings = append(warnings, s.warnings...)
	}
	msg := chat.Message{Role: chat.RoleAssistant, ToolCalls: calls}
	if content != nil {
		msg.Content = *content
	}
	return Completion{
		Message:        msg,
		FinishReason:   reason,
		Model:          r.Model,
		Usage:          usage,
		NoUsage:        noUsage,
		PromptReserved: promptReserved,
		Truncated:      reason == FinishLength,
		Warnings:       warnings,
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

// largerUsage settles a total that differs from prompt plus completion by
// the larger count (docs/brama.md#lenient-validation): a larger total's
// excess is counted as completion tokens, so it is priced and never lost;
// a smaller total is replaced by the sum. The result is consistent.
func largerUsage(u chat.Usage) chat.Usage {
	sum := u.PromptTokens + u.CompletionTokens
	if sum < u.PromptTokens {
		sum = math.MaxUint64
	}
	if u.TotalTokens > sum {
		u.CompletionTokens += u.TotalTokens - sum
		sum = u.TotalTokens
	}
	u.TotalTokens = sum
	return u
}
