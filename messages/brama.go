package messages

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
)

// CompletionRequest asks the brama gateway for one model completion on
// behalf of a being. The gateway answers the sender with a
// CompletionResponse; it never answers twice and never drops a request it
// accepted, even at shutdown (an abandoned call is answered as an
// indeterminate error). A request sent without a sender is refused without
// calling Brama, because nobody could account for its cost.
type CompletionRequest struct {
	AgentID  string         // the being's identity, signed into the request
	BeingID  string         // the being's own id: its prompt_cache_key (docs/brama.md#prompt-cache-key)
	Model    string         // an exact model id or a selector (docs/brama.md#model-selection)
	Messages []chat.Message // the cognition messages of this round
	// Encoded are more messages of the round, after Messages, already
	// encoded (each the JSON text encoding/json writes for a
	// chat.Message, held packed): the being's conversation window, sent
	// as held.
	Encoded state.Encoded
	Tools   []chat.Tool // the full catalogue the model may call
	// ToolsEncoded, when set, is Tools encoded once (as encoding/json
	// writes them) and sent as it is: a catalogue shared by thousands of
	// beings is not encoded again for every round.
	ToolsEncoded json.RawMessage
	// MaxTokens, when positive, is the completion's max_tokens as the
	// being's reservation decided it (docs/money.md#no-overdraft); the
	// gateway never sends more than its configured value. Zero means the
	// configured value.
	MaxTokens int
}

func (r CompletionRequest) String() string {
	return fmt.Sprintf("CompletionRequest{agent=%s model=%s messages=%d tools=%d}",
		r.AgentID, r.Model, len(r.Messages), len(r.Tools))
}

// CompletionResponse is the validated result of a CompletionRequest. When Err
// is nil the completion passed every check of
// docs/brama.md#response-validation: Message is the assistant message
// (content "" when the model sent none), Usage.TotalTokens equals prompt plus
// completion, and Truncated reports a "length" finish, which the caller
// journals as `completion truncated at max tokens`; Warnings are the
// lenient-validation warnings of a gateway other than Brama, which the caller
// journals in order. Elapsed is the duration of the HTTP call, charged as
// instance time; it is set on errors too. Err is a supervision error of class
// ClassBrama whose kind (permanent, transient, indeterminate) decides what the
// being does.
//
// Prices, when set, is the per-model price of this completion
// (docs/brama.md#per-model-prices); nil means the configured two prices.
// Billed, with Err, means the refused completion carried a well-formed usage
// block (Usage): it is debited before the error is handled
// (docs/brama.md#billed-rejections). NoUsage means the gateway reported no
// usage and Usage is the reservation's token bound (brama.ReservationUsage).
type CompletionResponse struct {
	Message      chat.Message
	FinishReason string
	Model        string // the model the response names; "" when none
	Usage        chat.Usage
	Prices       *prices.Pair
	// Unpriced: the response names a model no price is known for, and
	// Prices are the requested model's (docs/money.md#no-overdraft).
	Unpriced  bool
	Truncated bool
	Warnings  []string
	NoUsage   bool
	// PromptReserved: Usage's prompt tokens are the request's bytes, the
	// gateway having reported none; the being charges its own reserved
	// prompt bound in their place (docs/money.md#no-overdraft).
	PromptReserved bool
	Billed         bool
	RequestBytes   int
	Elapsed        time.Duration
	Err            error
}

func (r CompletionResponse) String() string {
	if r.Err != nil {
		return fmt.Sprintf("CompletionResponse{err=%v elapsed=%s}", r.Err, r.Elapsed)
	}
	return fmt.Sprintf("CompletionResponse{finish=%s calls=%d tokens=%d truncated=%t elapsed=%s}",
		r.FinishReason, len(r.Message.ToolCalls), r.Usage.TotalTokens, r.Truncated, r.Elapsed)
}

// ModelsRequest asks the brama gateway which models Brama currently
// advertises on /v1/models. The gateway answers with a ModelsResponse
// without blocking its mailbox.
type ModelsRequest struct{}

func (ModelsRequest) String() string { return "ModelsRequest{}" }

// ModelsResponse lists the model ids the gateway advertises, in its order,
// or the classified error that prevented the listing. Selectors reports
// whether the gateway is Brama, whose selectors (any, best, task:…) a being
// may switch to; any other gateway accepts only listed ids
// (docs/brama.md#model-selection).
type ModelsResponse struct {
	IDs       []string
	Selectors bool
	Err       error
}

func (r ModelsResponse) String() string {
	if r.Err != nil {
		return fmt.Sprintf("ModelsResponse{err=%v}", r.Err)
	}
	return fmt.Sprintf("ModelsResponse{models=%d}", len(r.IDs))
}

// HealthRequest asks the brama gateway whether Brama's /health answers
// {"status":"ok"}. The gateway answers with a HealthResponse.
type HealthRequest struct{}

// HealthResponse carries nil when Brama is healthy, else the classified
// error.
type HealthResponse struct {
	Err error
}

func (r HealthResponse) String() string {
	if r.Err != nil {
		return fmt.Sprintf("HealthResponse{err=%v}", r.Err)
	}
	return "HealthResponse{ok}"
}
