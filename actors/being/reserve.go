package being

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/messages"
)

// The money side of a round (docs/money.md#no-overdraft,
// docs/money.md#spend-limits): before each completion the being reserves
// its worst-case cost, lowering max_tokens to what the balance pays for,
// and, when spend limits are set, has the family's spend limiter admit
// the reservation. The reservation lives only in memory: it holds nothing
// durable, and after a crash the next round reserves again.

// Defaults of the reservation.
const (
	defaultMaxTokens           = 2048
	defaultMinCompletionTokens = 256
	defaultHTTPTimeout         = 120 * time.Second
	// requestOverhead bounds the request body's fields besides the
	// messages, the tools and the prompt cache key: model, max_tokens
	// (under either name), temperature, braces and keys.
	requestOverhead = 160
	// cacheKeyField is the key of prompt_cache_key, which the gateway
	// may send with the being's id (docs/brama.md#prompt-cache-key).
	cacheKeyField = `,"prompt_cache_key":`
)

// StatusThrottled is a being's debug status while a spend limit makes
// it wait (docs/money.md#spend-limits).
const StatusThrottled = "throttled"

// ExceededReservation is the warning journaled when a completion cost
// more than its reservation (a gateway that ignored max_tokens).
const ExceededReservation = "completion cost exceeded its reservation"

func (o Options) maxTokens() int {
	if o.MaxTokens > 0 {
		return o.MaxTokens
	}
	return defaultMaxTokens
}

func (o Options) minCompletionTokens() int {
	if o.MinCompletionTokens > 0 {
		return o.MinCompletionTokens
	}
	return defaultMinCompletionTokens
}

func (o Options) httpTimeout() time.Duration {
	if o.HTTPTimeout > 0 {
		return o.HTTPTimeout
	}
	return defaultHTTPTimeout
}

// bodyBound is an upper bound of the request body's bytes for the
// system message, the encoded window and the catalogue: the window's
// bytes are exact, the system message's bounded (chat.SizeBound). The
// prompt cache key is counted whether or not the gateway sends it.
func (b *Being) bodyBound(system chat.Message, window state.Encoded) int {
	return chat.SizeBound([]chat.Message{system}) + window.Bytes() + b.catalog.bytes + chat.QuotedLen(b.st.Mind.CurrentModel) +
		requestOverhead + len(cacheKeyField) + chat.QuotedLen(b.me.ID)
}

// reserve decides the round's completion: its max_tokens and its
// reservation, or false when the balance cannot pay for the smallest
// completion allowed (the being is exhausted).
func (b *Being) reserve(system chat.Message, window state.Encoded) (budget.Reservation, bool) {
	bound, sent := b.promptBound(system, window)
	b.cycle.sent, b.cycle.promptBound = sent, bound
	return b.reservePricing().Reserve(bound, b.opts.maxTokens(), b.opts.minCompletionTokens(),
		b.opts.httpTimeout(), b.st.Budget.Remaining)
}

// messageAllowance is the tokens a chat template may add around one
// message beyond its JSON text, in the tight prompt bound
// (docs/money.md#no-overdraft): OpenAI's format adds 3 per message and 1
// for a name, and 3 to prime the reply; the Llama, Mistral and Qwen
// templates at most 6 markers per message. The message's JSON text,
// counted a token per byte, already holds at least 28 bytes of keys and
// punctuation the template does not send.
const messageAllowance = 8

// sentPrompt is what a request's prompt was, for bounding the next one
// (tightPrompt): its model, a hash of its system message, its tools and
// its window's first n messages, and, once answered, the prompt tokens
// the completion reported.
type sentPrompt struct {
	model  string
	system uint64
	tools  *catalogView
	n      int
	window uint64
	tokens uint64
}

// promptBound bounds the round's prompt tokens: the request body's bytes
// (bodyBound), or, when the request is the last answered one plus
// messages appended since, that one's reported prompt tokens plus a
// token per byte of each appended message and messageAllowance for it
// (tightPrompt), whichever is smaller; and what is sent, which bounds
// the next round's once answered.
func (b *Being) promptBound(system chat.Message, window state.Encoded) (int, sentPrompt) {
	bound := b.bodyBound(system, window)
	sent, tight, ok := b.tightPrompt(system, window)
	if ok && tight < uint64(bound) {
		return int(tight), sent
	}
	return bound, sent
}

// tightPrompt is what is sent now and, when the last answered request
// (purse.prompt) was to the same exact model with the same system
// message and tools, and its window is the start of this one, the tight
// bound of this prompt's tokens.
func (b *Being) tightPrompt(system chat.Message, window state.Encoded) (sent sentPrompt, tight uint64, ok bool) {
	sent = sentPrompt{model: b.st.Mind.CurrentModel, tools: b.catalog, n: len(window)}
	var h maphash.Hash
	h.SetSeed(promptSeed)
	h.WriteString(system.Content)
	sent.system = h.Sum64()
	h.Reset()
	prev := b.purse.prompt
	prefix := -1
	if prev != nil && prev.tokens > 0 && prev.model == sent.model && !gateway.IsSelector(sent.model) &&
		prev.system == sent.system && prev.tools == sent.tools && prev.n <= len(window) {
		prefix = prev.n
	}
	var prefixHash uint64
	appended := uint64(0)
	for i, p := range window {
		if i == prefix {
			prefixHash = h.Sum64()
		}
		if prefix >= 0 && i >= prefix {
			appended += uint64(p.Len()) + messageAllowance
		}
		var size [8]byte
		binary.LittleEndian.PutUint64(size[:], uint64(len(p)))
		h.Write(size[:])
		h.Write(p)
	}
	sent.window = h.Sum64()
	if prefix == len(window) {
		prefixHash = sent.window
	}
	if prefix < 0 || prefixHash != prev.window {
		return sent, 0, false
	}
	return sent, prev.tokens + appended, true
}

// promptSeed seeds the hashes of sent prompts; any fixed seed does, the
// hashes never leave the process.
var promptSeed = maphash.MakeSeed()

// reservedPrompt is u, a usage whose prompt tokens the gateway charged
// at the request's bytes for want of a count, with the prompt tokens the
// round's reservation assumed when they are fewer: "charged its
// reservation" is the being's reservation (docs/brama.md#charging-without-usage).
// The cached and cache-write counts stay parts of the prompt.
func (b *Being) reservedPrompt(u chat.Usage) chat.Usage {
	bound := uint64(max(b.cycle.promptBound, 0))
	if bound == 0 || bound >= u.PromptTokens {
		return u
	}
	u.PromptTokens = bound
	u.CachedTokens = min(u.CachedTokens, bound)
	u.CacheWriteTokens = min(u.CacheWriteTokens, bound-u.CachedTokens)
	u.TotalTokens = bound + u.CompletionTokens
	return u
}

// notePrompt keeps the round's prompt, with the prompt tokens resp
// reports, as the start of the next round's tight bound. A completion
// that reported no usage or no prompt tokens (its prompt was charged the
// reservation), or that another model
// answered (its tokenizer may count otherwise; a response that names no
// model is the requested one, and a dated release of the
// requested model, whose name begins with it, is the same model), leaves
// none.
func (b *Being) notePrompt(resp messages.CompletionResponse) {
	sent := b.cycle.sent
	if resp.NoUsage || resp.PromptReserved || resp.Usage.PromptTokens == 0 || (resp.Model != "" && !strings.HasPrefix(resp.Model, sent.model)) {
		b.purse.prompt = nil
		return
	}
	sent.tokens = resp.Usage.PromptTokens
	b.purse.prompt = &sent
}

// reserveFloor is the reservation of the smallest completion the being
// may ask for now: SINGULARITY_MIN_COMPLETION_TOKENS of output at its
// current prices, with the prompt of system and window.
func (b *Being) reserveFloor(system chat.Message, window state.Encoded) money.Amount {
	bound, _ := b.promptBound(system, window)
	return b.reservePricing().Bound(bound, b.opts.minCompletionTokens(), b.opts.httpTimeout())
}

// reservePricing is what the next completion is reserved at: the
// configured prices, or the prices file's for the current model (for a
// model the file does not list, the highest of each price, so the bound
// holds whichever model answers; docs/brama.md#per-model-prices).
func (b *Being) reservePricing() budget.Pricing {
	p := b.opts.Pricing
	if b.opts.Prices.Empty() {
		return p
	}
	pair := b.opts.Prices.Reservation(b.st.Mind.CurrentModel, p.Tokens())
	return p.WithTokens(pair.Higher(b.purse.billed))
}

// UnpricedModelBilled is the warning journaled when a completion's
// response names a model no price is known for: it is debited at the
// prices of the model it was reserved at (docs/money.md#no-overdraft).
const UnpricedModelBilled = "completion named a model without a price; debited at the reserved model's prices"

// PricierModelBilled is the warning journaled when a completion is billed
// at the prices of the model its response names, and they are higher than
// the prices it was reserved at (docs/money.md#no-overdraft).
const PricierModelBilled = "completion billed at a pricier model than reserved; reserving at its prices from now on"

// noteBilledPrices compares the prices a completion is billed at (the
// response's model's, per BRAMA_PRICES_FILE) with those it was reserved
// at: when its highest prompt price or its output price is higher, the
// being warns once for that rise and reserves at the higher of each price
// from then on, so that the next reservation holds whichever of the
// models answers.
func (b *Being) noteBilledPrices(billed *prices.Pair) {
	if billed == nil || b.opts.Prices.Empty() {
		return
	}
	reserved := b.reservePricing().Tokens()
	if billed.PromptWorst().Cmp(reserved.PromptWorst()) <= 0 && billed.Output.Cmp(reserved.Output) <= 0 {
		return
	}
	b.purse.billed = b.purse.billed.Higher(*billed)
	b.warn(PricierModelBilled)
}

// available is what the being may endow a child with now: its remaining
// balance less the reservation of its next completion, estimated by the
// last one (docs/money.md#funded-children).
func (b *Being) available() money.Amount {
	return b.st.Budget.Remaining.Sub(b.purse.lastReservation)
}

// limited reports whether spend limits apply to this being.
func (b *Being) limited() bool { return b.opts.SpendLimiter != nil }

// admit has the family's spend limiter admit the round's reservation;
// the round's completion is asked once it is (admissionAnswered).
func (b *Being) admit(ctx actor.Context) {
	req := messages.SpendRequest{Being: b.opts.StateDir, Amount: b.cycle.reservation.Bound, BeingLimit: b.opts.SpendLimit}
	b.cycle.waiting = waitLimit
	b.request(ctx, b.opts.SpendLimiter, req, askTimeout, replyAdmission)
}

// admissionAnswered goes on with the round once the reservation is
// admitted. A refusal makes the being wait (status throttled) until the
// limiter says the reservation fits, journaling the wait once; a limiter
// that does not answer in time is asked again after a second.
func (b *Being) admissionAnswered(ctx actor.Context, r reply) {
	reply, ok := r.res.(messages.SpendResponse)
	admitted := r.err == nil && ok && reply.Admitted
	if b.phase != phaseCycling {
		// Draining: this is the round boundary a stop waits for.
		if admitted {
			b.settle(ctx, reply.Ticket, money.Zero) // never used
		}
		b.cycle.waiting = waitNothing
		b.abandonCycle(ctx)
		return
	}
	if admitted {
		b.cycle.waiting = waitNothing
		b.purse.throttled = false
		b.cycle.ticket = reply.Ticket
		b.requestCompletion(ctx)
		return
	}
	b.cycle.wait = time.Second
	if ok && r.err == nil {
		b.cycle.wait = max(reply.RetryAfter, time.Millisecond)
	}
	if !b.purse.throttled {
		b.purse.throttled = true
		b.warn(fmt.Sprintf("spend limit reached; waiting %d s", int64((b.cycle.wait+time.Second-1)/time.Second)))
		b.commit(ctx, nil, nextAdmitWait)
		return
	}
	b.waitToAdmit(ctx)
}

// waitToAdmit asks the limiter again after the cycle's wait.
func (b *Being) waitToAdmit(ctx actor.Context) {
	if b.phase != phaseCycling {
		// A stop came while the wait's warning was being written.
		b.cycle.waiting = waitNothing
		b.abandonCycle(ctx)
		return
	}
	b.cycle.waiting = waitLimit
	self, system, epoch := ctx.Self(), ctx.ActorSystem(), b.epoch
	b.next.cancel = b.opts.clockAfter(b.cycle.wait, func() { system.Root.Send(self, admitRetry{epoch: epoch}) })
}

// admitRetry is the timer's word to ask the limiter again.
type admitRetry struct{ epoch uint64 }

func (b *Being) handleAdmitRetry(ctx actor.Context, msg admitRetry) {
	if msg.epoch != b.epoch || b.cycle == nil || b.cycle.waiting != waitLimit {
		return
	}
	if b.phase != phaseCycling {
		b.cycle.waiting = waitNothing
		b.abandonCycle(ctx)
		return
	}
	b.admit(ctx)
}

// settle tells the limiter what the admitted completion actually cost.
func (b *Being) settle(ctx actor.Context, ticket uint64, cost money.Amount) {
	if b.limited() && ticket != 0 {
		ctx.Send(b.opts.SpendLimiter, messages.SpendSettled{Ticket: ticket, Amount: cost})
	}
}
