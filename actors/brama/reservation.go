package brama

import (
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
)

var perMillion = money.FromInt(1_000_000)

// ReservationTokenCost is the token part of a completion's worst-case cost
// (docs/brama.md#charging-without-usage): the request bytes at p's input
// price plus maxTokens at its output price, per million, each part rounded
// up to 12 places. It is what a completion that reports no usage is
// charged (through ReservationUsage, priced by the ledger), and the first
// two lines of the reservation bound before a completion; the instance
// part is the caller's.
func ReservationTokenCost(p prices.Pair, requestBytes, maxTokens int) money.Amount {
	u := ReservationUsage(requestBytes, maxTokens)
	in := money.FromUint(u.PromptTokens).Mul(p.Input).QuoUp(perMillion)
	out := money.FromUint(u.CompletionTokens).Mul(p.Output).QuoUp(perMillion)
	return in.Add(out)
}
