package money

import (
	"math/big"
	"strings"
)

// oneCent is 0.01.
var oneCent = big.NewRat(1, 100)

// Human is the amount as shown to people (docs/money.md#shown-to-people):
// rounded half away from zero to the cent, or, when it is not zero but
// smaller than a cent, to four places below the cent (six decimals), so
// that a sub-cent cost never reads as zero. An amount that rounds to zero
// has no sign. JSON, state and the journal keep the exact decimal
// (String).
func (a Amount) Human() string {
	r := a.Rat()
	prec := 2
	if abs := new(big.Rat).Abs(r); abs.Sign() != 0 && abs.Cmp(oneCent) < 0 {
		prec = 6
	}
	s := r.FloatString(prec)
	if rest, neg := strings.CutPrefix(s, "-"); neg && strings.Trim(rest, "0.") == "" {
		return rest
	}
	return s
}
