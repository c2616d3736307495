package brama

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
)

const okUsage = `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`

// TestResponseValidation runs every sentence of
// docs/brama.md#response-validation through the real client and server.
func TestResponseValidation(t *testing.T) {
	call := `{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}`
	echo := bramatest.Call("c1", "echo", `{"text":"hi"}`)
	tests := []struct {
		name string
		body string
		want Completion // compared when err is ""
		err  string
		// prefix compares only the start of err: the rest is the JSON
		// decoder's own wording.
		prefix bool
	}{
		{
			name: "no choice",
			body: `{"choices":[],` + okUsage + `}`,
			err:  "brama: response must contain exactly one choice",
		},
		{
			name: "choices missing",
			body: `{` + okUsage + `}`,
			err:  "brama: response must contain exactly one choice",
		},
		{
			name: "two choices",
			body: `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":"b"},"finish_reason":"stop"}],` + okUsage + `}`,
			err:  "brama: response must contain exactly one choice",
		},
		{
			name: "tool_calls without calls",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"tool_calls"}],` + okUsage + `}`,
			err:  "brama: tool_calls finish reason without calls",
		},
		{
			name: "tool_calls with empty calls",
			body: `{"choices":[{"message":{"content":null,"tool_calls":[]},"finish_reason":"tool_calls"}],` + okUsage + `}`,
			err:  "brama: tool_calls finish reason without calls",
		},
		{
			name: "stop with calls",
			body: `{"choices":[{"message":{"content":"x","tool_calls":[` + call + `]},"finish_reason":"stop"}],` + okUsage + `}`,
			err:  "brama: stop finish reason with tool calls",
		},
		{
			name: "unsupported finish reason",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"content_filter"}],` + okUsage + `}`,
			err:  "brama: unsupported finish reason: content_filter",
		},
		{
			name: "length accepted and marked truncated",
			body: `{"choices":[{"message":{"content":null,"tool_calls":[` + call + `]},"finish_reason":"length"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{echo}},
				FinishReason: FinishLength, Usage: bramatest.Usage(10, 5), Truncated: true,
			},
		},
		{
			name: "length without calls accepted",
			body: `{"choices":[{"message":{"content":"cut sho"},"finish_reason":"length"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "cut sho"},
				FinishReason: FinishLength, Usage: bramatest.Usage(10, 5), Truncated: true,
			},
		},
		{
			name: "usage total mismatch",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":16}}`,
			err:  "brama: usage total does not match prompt plus completion",
		},
		{
			name: "usage total zero recomputed",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":0}}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x"},
				FinishReason: FinishStop, Usage: bramatest.Usage(10, 5),
			},
		},
		{
			name: "usage total absent recomputed",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":0}}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x"},
				FinishReason: FinishStop, Usage: bramatest.Usage(7, 0),
			},
		},
		{
			name: "content absent is empty",
			body: `{"choices":[{"message":{"role":"assistant"},"finish_reason":"stop"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant},
				FinishReason: FinishStop, Usage: bramatest.Usage(10, 5),
			},
		},
		{
			name: "content null with calls is empty",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[` + call + `]},"finish_reason":"tool_calls"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{echo}},
				FinishReason: FinishToolCalls, Usage: bramatest.Usage(10, 5),
			},
		},
		{
			name: "not JSON",
			body: `<html>bad gateway</html>`,
			err:  "brama: invalid completion response: invalid character '<'", prefix: true,
		},
		{
			name: "choices of the wrong type",
			body: `{"choices":{},` + okUsage + `}`,
			err:  "brama: invalid completion response: json: cannot unmarshal object", prefix: true,
		},
		{
			name: "negative tokens",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-1,"completion_tokens":5,"total_tokens":4}}`,
			err:  "brama: invalid completion response: usage: prompt_tokens is not a token count",
		},
		{
			name: "usage missing",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`,
			err:  "brama: invalid completion response: missing usage",
		},
		{
			name: "finish reason missing",
			body: `{"choices":[{"message":{"content":"x"}}],` + okUsage + `}`,
			err:  "brama: invalid completion response: missing finish_reason",
		},
	}
	srv := newServer(t)
	c := newClient(t, srv.URL)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Enqueue(bramatest.RawReply(tt.body))
			got, err := c.Complete(testContext(t), sampleParams())
			switch {
			case tt.prefix:
				requireBramaKind(t, err, fault.Permanent)
				require.True(t, hasPrefix(err.Error(), tt.err), err.Error())
				return
			case tt.err != "":
				requireBramaError(t, err, fault.Permanent, tt.err)
				return
			}
			require.NoError(t, err)
			require.Positive(t, got.Elapsed)
			require.Equal(t, 1, got.Attempts)
			require.Positive(t, got.RequestBytes)
			got.Elapsed, got.Attempts, got.RequestBytes = 0, 0, 0
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCheckUsage(t *testing.T) {
	tests := []struct {
		name string
		in   chat.Usage
		want chat.Usage
		bad  bool
	}{
		{"consistent", chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, false},
		{"zero total recomputed", chat.Usage{PromptTokens: 3, CompletionTokens: 4}, chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, false},
		{"all zero", chat.Usage{}, chat.Usage{}, false},
		{"total too large", chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 8}, chat.Usage{}, true},
		{"total too small", chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 6}, chat.Usage{}, true},
		{"overflowing sum refused", chat.Usage{PromptTokens: math.MaxUint64, CompletionTokens: 2, TotalTokens: 1}, chat.Usage{}, true},
		{"overflowing sum saturates", chat.Usage{PromptTokens: math.MaxUint64, CompletionTokens: 2}, chat.Usage{PromptTokens: math.MaxUint64, CompletionTokens: 2, TotalTokens: math.MaxUint64}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkUsage(tt.in)
			if tt.bad {
				requireBramaError(t, err, fault.Permanent, "brama: usage total does not match prompt plus completion")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestLenientValidation is docs/brama.md#lenient-validation: with a gateway
// other than Brama each quirk passes with its warning, and everything else
// is refused as Brama would.
func TestLenientValidation(t *testing.T) {
	call := `{"id":"c1","type":"function","function":{"name":"echo","arguments":"{}"}}`
	echo := bramatest.Call("c1", "echo", `{}`)
	reservation := ReservationUsage(300, 64)
	tests := []struct {
		name string
		body string
		want Completion
		err  string
	}{
		{
			name: "stop with calls runs the calls",
			body: `{"model":"m-1","choices":[{"message":{"content":"x","tool_calls":[` + call + `]},"finish_reason":"stop"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x", ToolCalls: []chat.ToolCall{echo}},
				FinishReason: FinishStop, Model: "m-1", Usage: bramatest.Usage(10, 5),
				Warnings: []string{"completion finished with stop but asked for tools"},
			},
		},
		{
			name: "content filter is an empty reply",
			body: `{"choices":[{"message":{"content":"half a senten","tool_calls":[` + call + `]},"finish_reason":"content_filter"}],` + okUsage + `}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant},
				FinishReason: FinishContentFilter, Usage: bramatest.Usage(10, 5),
				Warnings: []string{"completion stopped by the provider's content filter"},
			},
		},
		{
			name: "a larger total is debited",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":19}}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x"},
				FinishReason: FinishStop, Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 9, TotalTokens: 19},
				Warnings: []string{"usage total does not match prompt plus completion"},
			},
		},
		{
			name: "a smaller total gives way to the sum",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":12}}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x"},
				FinishReason: FinishStop, Usage: bramatest.Usage(10, 5),
				Warnings: []string{"usage total does not match prompt plus completion"},
			},
		},
		{
			name: "no usage is charged the reservation",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x"},
				FinishReason: FinishStop, Usage: bramatest.Usage(300, 64), NoUsage: true, PromptReserved: true,
				Warnings: []string{"completion reported no usage; charged its reservation"},
			},
		},
		{
			name: "quirks together keep their order",
			body: `{"choices":[{"message":{"content":"x","tool_calls":[` + call + `]},"finish_reason":"stop"}]}`,
			want: Completion{
				Message:      chat.Message{Role: chat.RoleAssistant, Content: "x", ToolCalls: []chat.ToolCall{echo}},
				FinishReason: FinishStop, Usage: bramatest.Usage(300, 64), NoUsage: true, PromptReserved: true,
				Warnings: []string{"completion finished with stop but asked for tools", "completion reported no usage; charged its reservation"},
			},
		},
		{
			name: "other finish reasons are still refused",
			body: `{"choices":[{"message":{"content":"x"},"finish_reason":"function_call"}],` + okUsage + `}`,
			err:  "brama: unsupported finish reason: function_call",
		},
		{
			name: "two choices are still refused",
			body: `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":"b"},"finish_reason":"stop"}]}`,
			err:  "brama: response must contain exactly one choice",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCompletion([]byte(tt.body), true, reservation)
			if tt.err != "" {
				requireBramaError(t, err, fault.Permanent, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestBilledRejection is docs/brama.md#billed-rejections: a completion
// refused as malformed but carrying a well-formed usage block comes back
// with that usage and Billed, so the being can debit what the gateway
// billed; without a well-formed block nothing is billed.
func TestBilledRejection(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		billed chat.Usage // zero when nothing is billed
	}{
		{"stop with calls", `{"model":"m","choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"e","arguments":"{}"}}]},"finish_reason":"stop"}],` + okUsage + `}`, bramatest.Usage(10, 5)},
		{"no choice", `{"choices":[],` + okUsage + `}`, bramatest.Usage(10, 5)},
		{"choices of the wrong shape", `{"choices":{},` + okUsage + `}`, bramatest.Usage(10, 5)},
		{"a model of the wrong shape", `{"model":5,"choices":[],` + okUsage + `}`, bramatest.Usage(10, 5)},
		{"usage total larger than its counts: the larger count", `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":16}}`,
			chat.Usage{PromptTokens: 10, CompletionTokens: 6, TotalTokens: 16}},
		{"a cache count that is no token count: every prompt token at the input price", `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":"4"}}}`,
			bramatest.Usage(10, 5)},
		{"usage of the wrong shape", `{"choices":[],"usage":{"prompt_tokens":"ten"}}`, chat.Usage{}},
		{"no usage", `{"choices":[]}`, chat.Usage{}},
		{"not JSON", `<html>`, chat.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCompletion([]byte(tt.body), false, chat.Usage{})
			requireBramaKind(t, err, fault.Permanent)
			if tt.billed == (chat.Usage{}) {
				require.Equal(t, Completion{}, got)
				return
			}
			require.True(t, got.Billed)
			require.Equal(t, tt.billed, got.Usage)
		})
	}
}

func TestReservationUsage(t *testing.T) {
	require.Equal(t, chat.Usage{PromptTokens: 1200, CompletionTokens: 2048, TotalTokens: 3248}, ReservationUsage(1200, 2048))
	require.Equal(t, chat.Usage{}, ReservationUsage(-1, -5))
}

// TestEncodeMatchesRequestBody holds the hand-written completion body to
// what encoding/json writes for requestBody, byte for byte: with and
// without tools (encoded beforehand or not), either max tokens field,
// none, a prompt cache key, and text that encoding/json escapes.
func TestEncodeMatchesRequestBody(t *testing.T) {
	tools := []chat.Tool{{Type: "function", Function: chat.Function{Name: "echo__echo", Description: "Echo <it> & more", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	toolsEncoded, err := json.Marshal(tools)
	require.NoError(t, err)
	window := []chat.Message{
		{Role: chat.RoleUser, Content: "Begin <cycle> 1 & \u2028 \"quoted\""},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "echo__echo", Arguments: `{"m":"x"}`}}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Name: "echo__echo", Content: `{"status":"success"}`},
	}
	var encoded state.Encoded // packed, as a being holds it
	for _, m := range window {
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		encoded = append(encoded, state.Pack(raw))
	}
	system := []chat.Message{{Role: chat.RoleSystem, Content: "You are Ada."}}
	cases := []struct {
		name     string
		field    gateway.MaxTokensField
		p        Params
		cacheKey bool
	}{
		{"tools encoded", gateway.FieldMaxTokens, Params{Model: "m-1", Messages: system, Encoded: encoded, Tools: tools, ToolsEncoded: toolsEncoded, MaxTokens: 2048, Temperature: 0.2}, false},
		{"tools not encoded", gateway.FieldMaxCompletionTokens, Params{Model: "m-1", Messages: system, Encoded: encoded, Tools: tools, MaxTokens: 300, Temperature: 1}, false},
		{"no tools, no max", gateway.FieldMaxTokens, Params{Model: "auto:<cheap>", Messages: append(system, window...)}, false},
		{"encoded but empty tools", gateway.FieldMaxTokens, Params{Model: "m", Messages: system, ToolsEncoded: json.RawMessage(`null`), Temperature: 0.7}, false},
		{"prompt cache key", gateway.FieldMaxTokens, Params{Model: "m-1", BeingID: "child:<7>", Messages: system, Encoded: encoded, Tools: tools, MaxTokens: 64, Temperature: 0.2}, true},
		{"prompt cache key off", gateway.FieldMaxTokens, Params{Model: "m-1", BeingID: "child-7", Messages: system, MaxTokens: 64}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{maxField: tc.field, cacheKey: tc.cacheKey}
			got, err := c.encode(tc.p)
			require.NoError(t, err)
			msgs, err := appendMessages(nil, tc.p.Messages, tc.p.Encoded)
			require.NoError(t, err)
			rb := requestBody{Model: tc.p.Model, Messages: msgs, Temperature: tc.p.Temperature, Tools: tc.p.Tools}
			if tc.cacheKey {
				rb.PromptCacheKey = tc.p.BeingID
			}
			if tc.field == gateway.FieldMaxCompletionTokens {
				rb.MaxCompletionTokens = tc.p.MaxTokens
			} else {
				rb.MaxTokens = tc.p.MaxTokens
			}
			want, err := json.Marshal(rb)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

// TestImplausibleUsage is docs/brama.md#implausible-usage: a usage block
// no request could have cost (more prompt tokens than 4 per request byte,
// more completion tokens than 4 times max_tokens) is refused by Brama's
// strict validation and capped with a warning by the lenient one; both
// debit the capped counts. A reply of 2^64−1 tokens is never debited as
// such.
func TestImplausibleUsage(t *testing.T) {
	reservation := ReservationUsage(300, 64) // a 300-byte request, max_tokens 64
	reply := func(prompt, completion uint64) string {
		return fmt.Sprintf(`{"model":"m","choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, prompt, completion)
	}
	tests := []struct {
		name               string
		prompt, completion uint64
		strictErr          string
		capped             chat.Usage // lenient; zero when not capped
	}{
		{"at the bounds", 1200, 256, "", chat.Usage{}},
		{"prompt past its bound", 1201, 5, "brama: inconsistent usage: 1201 prompt tokens for a request of 300 bytes", bramatest.Usage(1200, 5)},
		{"completion past its bound", 10, 257, "brama: inconsistent usage: 257 completion tokens for max_tokens 64", bramatest.Usage(10, 256)},
		{"2^64-1 completion tokens", 10, math.MaxUint64, fmt.Sprintf("brama: inconsistent usage: %d completion tokens for max_tokens 64", uint64(math.MaxUint64)), bramatest.Usage(10, 256)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(reply(tt.prompt, tt.completion))
			strict, err := parseCompletion(body, false, reservation)
			lenient, lerr := parseCompletion(body, true, reservation)
			require.NoError(t, lerr)
			if tt.strictErr == "" {
				require.NoError(t, err)
				require.Equal(t, bramatest.Usage(tt.prompt, tt.completion), strict.Usage)
				require.Equal(t, strict, lenient)
				return
			}
			requireBramaError(t, err, fault.Permanent, tt.strictErr)
			require.Equal(t, Completion{Usage: tt.capped, Billed: true, Model: "m"}, strict, "the refusal is debited its capped counts")
			require.Equal(t, tt.capped, lenient.Usage)
			require.Equal(t, []string{WarnUsageCapped}, lenient.Warnings)
		})
	}
	// A refusal for another reason with an implausible block is debited
	// its capped counts too, never the block.
	refused, err := parseCompletion([]byte(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":18446744073709551615}}`), false, reservation)
	requireBramaKind(t, err, fault.Permanent)
	require.Equal(t, Completion{Usage: bramatest.Usage(1, 256), Billed: true}, refused)
}
