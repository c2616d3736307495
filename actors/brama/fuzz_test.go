package brama

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// FuzzParseCompletion checks parseCompletion, the validation of a 2xx body
// (docs/brama.md#response-validation): it never panics; every refusal is a
// permanent brama error; every accepted body yields an assistant message
// whose finish reason, tool calls and usage obey the table, whose cached
// and cache-write tokens fit in its prompt tokens (for a billed refusal
// too), and which parses back to the same completion when re-encoded.
func FuzzParseCompletion(f *testing.F) {
	call := `{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}`
	for _, s := range []string{
		`{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` + okUsage + `}`,
		`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + call + `]},"finish_reason":"tool_calls"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":null,"tool_calls":[` + call + `,` + call + `]},"finish_reason":"length"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"cut sho"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":0}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":0}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":2}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":2,"total_tokens":1}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":18446744073709551615}}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":18446744073709551615}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":16}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-1,"completion_tokens":5,"total_tokens":4}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1.5}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":null}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"x"}}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":null}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"content_filter"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[` + call + `]},"finish_reason":"stop"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":null,"tool_calls":[]},"finish_reason":"tool_calls"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":"b"},"finish_reason":"stop"}],` + okUsage + `}`,
		`{"choices":[],` + okUsage + `}`,
		`{"choices":{},` + okUsage + `}`,
		`{"choices":[null],` + okUsage + `}`,
		`{"choices":[{"message":{"content":5},"finish_reason":"stop"}],` + okUsage + `}`,
		`{"choices":[{"message":{"content":"\ud83d\ude00 \u0000"},"finish_reason":"stop"}],` + okUsage + `} `,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],` + okUsage + `}{}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":3}}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":11}}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_cache_hit_tokens":4,"prompt_cache_miss_tokens":6}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cache_read_input_tokens":4,"cache_creation_input_tokens":6,"prompt_tokens_details":{"cached_tokens":4}}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cache_read_input_tokens":4,"cache_creation_input_tokens":7}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cache_read_input_tokens":4,"prompt_tokens_details":{"cached_tokens":5}}}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cache_creation_input_tokens":18446744073709551615,"cache_read_input_tokens":1}}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":11}}}`,
		`<html>bad gateway</html>`, `null`, `[]`, `""`, ``, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reservation := ReservationUsage(len(body), 64)
		c, err := parseCompletion(body, false, reservation)
		lc, lerr := parseCompletion(body, true, reservation)
		for _, u := range []chat.Usage{c.Usage, lc.Usage} {
			if u.CachedTokens > u.PromptTokens || u.CacheWriteTokens > u.PromptTokens-u.CachedTokens {
				t.Fatalf("parseCompletion(%q) returned usage %+v whose cache counts exceed its prompt tokens", body, u)
			}
		}
		if lerr == nil && implausible(lc.Usage, reservation) != "" {
			t.Fatalf("lenient validation of %q accepted implausible usage %+v", body, lc.Usage)
		}
		if err == nil && (lerr != nil || !reflect.DeepEqual(c, lc)) {
			t.Fatalf("lenient validation of %q differs from strict: %+v %v, was %+v", body, lc, lerr, c)
		}
		if err != nil {
			if fault.ClassOf(err) != fault.ClassBrama || fault.KindOf(err) != fault.Permanent ||
				!strings.HasPrefix(err.Error(), "brama: ") {
				t.Fatalf("parseCompletion(%q): %v is not a permanent brama error (class %v, kind %v)",
					body, err, fault.ClassOf(err), fault.KindOf(err))
			}
			// A refusal returns nothing, or the billed usage alone
			// (docs/brama.md#billed-rejections), which adds up, saying
			// whether its prompt part is the reservation's.
			billed := Completion{Usage: c.Usage, Billed: true, Model: c.Model, PromptReserved: c.PromptReserved}
			if !reflect.DeepEqual(c, Completion{}) && (!reflect.DeepEqual(c, billed) || !saturated(c.Usage) && c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens) {
				t.Fatalf("parseCompletion(%q) failed but returned %+v", body, c)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("parseCompletion accepted malformed JSON %q", body)
		}
		checkCompletion(t, body, c)
		if saturated(c.Usage) {
			// A total that saturated at the maximum no longer equals
			// prompt plus completion, so it cannot be re-encoded.
			return
		}
		again, err := json.Marshal(map[string]any{
			"choices": []any{map[string]any{
				"message":       map[string]any{"role": c.Message.Role, "content": c.Message.Content, "tool_calls": c.Message.ToolCalls},
				"finish_reason": c.FinishReason,
			}},
			"usage": c.Usage.Report(),
			"model": c.Model,
		})
		if err != nil {
			t.Fatalf("re-encode %+v: %v", c, err)
		}
		c2, err := parseCompletion(again, false, chat.Usage{})
		if err != nil {
			t.Fatalf("re-encoding %s of accepted %q refused: %v", again, body, err)
		}
		if !reflect.DeepEqual(normalize(c), normalize(c2)) {
			t.Fatalf("re-encoding %s of %q parses as %+v, was %+v", again, body, c2, c)
		}
	})
}

// checkCompletion asserts the invariants every accepted completion holds.
func checkCompletion(t *testing.T, body []byte, c Completion) {
	t.Helper()
	m := c.Message
	if m.Role != chat.RoleAssistant || m.ToolCallID != "" || m.Name != "" {
		t.Fatalf("parseCompletion(%q): message %+v is not a plain assistant message", body, m)
	}
	switch c.FinishReason {
	case FinishStop:
		if len(m.ToolCalls) != 0 {
			t.Fatalf("parseCompletion(%q): stop with %d calls", body, len(m.ToolCalls))
		}
	case FinishToolCalls:
		if len(m.ToolCalls) == 0 {
			t.Fatalf("parseCompletion(%q): tool_calls without calls", body)
		}
	case FinishLength:
	default:
		t.Fatalf("parseCompletion(%q): finish reason %q", body, c.FinishReason)
	}
	if c.Truncated != (c.FinishReason == FinishLength) {
		t.Fatalf("parseCompletion(%q): truncated %v with finish reason %q", body, c.Truncated, c.FinishReason)
	}
	if c.Elapsed != 0 {
		t.Fatalf("parseCompletion(%q): elapsed %v before any exchange", body, c.Elapsed)
	}
	u := c.Usage
	overflow := u.PromptTokens+u.CompletionTokens < u.PromptTokens
	if overflow && !saturated(u) || !overflow && u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("parseCompletion(%q): usage %+v does not add up", body, u)
	}
}

// saturated reports a usage whose prompt plus completion overflows, so the
// total was filled in as the maximum (docs/money.md#budget).
func saturated(u chat.Usage) bool {
	return u.PromptTokens+u.CompletionTokens < u.PromptTokens && u.TotalTokens == math.MaxUint64
}

// normalize makes an empty and an absent tool call list compare equal.
func normalize(c Completion) Completion {
	if len(c.Message.ToolCalls) == 0 {
		c.Message.ToolCalls = nil
	}
	return c
}
