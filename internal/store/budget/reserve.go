package budget

import (
	"math"
	"math/big"
	"time"

	"github.com/wisent/singularity/internal/store/money"
)

var secondsPerHour = money.FromInt(3600)

// Bound is the worst-case cost of one completion (docs/money.md#no-overdraft):
//
//	prompt tokens × prompt price / 1e6 + max tokens × output price / 1e6
//	+ timeout seconds × instance price per hour / 3600
//
// each part rounded up to 12 places, where the prompt price is the highest
// a prompt token may pay (prices.Pair.PromptWorst: the input price, unless
// a cache price is higher). promptTokens is an upper bound of the prompt's
// tokens: the request body's bytes (a tokenizer never makes more tokens
// than the bytes it reads), or the being's tighter bound; so the first
// part bounds the prompt's cost whatever the provider cached. A timeout
// in fractions of a second counts as the next whole second.
func (p Pricing) Bound(promptTokens, maxTokens int, timeout time.Duration) money.Amount {
	return p.promptBound(promptTokens).Add(p.outputBound(maxTokens)).Add(p.instanceBound(timeout))
}

func (p Pricing) promptBound(promptTokens int) money.Amount {
	return money.FromInt(int64(max(promptTokens, 0))).Mul(p.Tokens().PromptWorst()).QuoUp(perMillion)
}

func (p Pricing) outputBound(tokens int) money.Amount {
	return money.FromInt(int64(max(tokens, 0))).Mul(p.OutputPerMillion).QuoUp(perMillion)
}

func (p Pricing) instanceBound(timeout time.Duration) money.Amount {
	secs := int64((max(timeout, 0) + time.Second - 1) / time.Second)
	return money.FromInt(secs).Mul(p.InstancePerHour).QuoUp(secondsPerHour)
}

// Reservation is what a being sets aside before one completion.
type Reservation struct {
	// MaxTokens is the max_tokens to request: the configured one, or
	// lower when only that much is affordable.
	MaxTokens int
	// Bound is the completion's worst-case cost at MaxTokens.
	Bound money.Amount
	// Lowered reports that MaxTokens is below the configured value.
	Lowered bool
}

// Reserve decides one completion (docs/money.md#no-overdraft). When the
// worst case at maxTokens fits in available it is reserved as it is;
// otherwise max_tokens is lowered to the largest count available pays
// for. Below minTokens the completion must not be requested: ok is
// false. available is the remaining balance less anything else already
// reserved.
func (p Pricing) Reserve(promptTokens, maxTokens, minTokens int, timeout time.Duration, available money.Amount) (r Reservation, ok bool) {
	bound := p.Bound(promptTokens, maxTokens, timeout)
	if bound.Cmp(available) <= 0 {
		return Reservation{MaxTokens: maxTokens, Bound: bound}, true
	}
	// What is left for the output once prompt and instance time are paid.
	left := available.Sub(p.promptBound(promptTokens)).Sub(p.instanceBound(timeout))
	if left.Sign() < 0 || p.OutputPerMillion.Sign() == 0 {
		return Reservation{}, false
	}
	// left sits on the 12-place grid, so rounding tokens × price up to it
	// stays within left exactly when tokens × price does.
	tokens := floorQuo(left.Mul(perMillion), p.OutputPerMillion)
	if tokens < int64(minTokens) || tokens <= 0 {
		return Reservation{}, false
	}
	n := int(min(tokens, int64(maxTokens)))
	return Reservation{MaxTokens: n, Bound: p.Bound(promptTokens, n, timeout), Lowered: n < maxTokens}, true
}

// floorQuo is ⌊a ÷ b⌋ for b > 0, saturated to the int64 range.
func floorQuo(a, b money.Amount) int64 {
	r := new(big.Rat).Quo(a.Rat(), b.Rat())
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: the floor, as the denominator is positive
	switch {
	case q.IsInt64():
		return q.Int64()
	case q.Sign() > 0:
		return math.MaxInt64
	default:
		return math.MinInt64
	}
}
