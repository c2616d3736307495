package being

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
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
	return b.reservePricing().Reserve(b.bodyBound(system, window), b.opts.maxTokens(), b.opts.minCompletionTokens(),
		b.opts.httpTimeout(), b.st.Budget.Remaining)
}

// reserveFloor is the reservation of the smallest completion the being
// may ask for now: SINGULARITY_MIN_COMPLETION_TOKENS of output at its
// current prices, with the prompt of system and window.
func (b *Being) reserveFloor(system chat.Message, window state.Encoded) money.Amount {
	return b.reservePricing().Bound(b.bodyBound(system, window), b.opts.minCompletionTokens(), b.opts.httpTimeout())
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
