// Package money is exact decimal arithmetic for every amount the runtime
// handles: balances, prices, debits and credits. It wraps
// github.com/ericlagergren/decimal so that no float64 ever touches money,
// prints amounts in the plain notation of SPEC §7.5, and rounds at the
// ledger's resolution of 12 decimal places in a stated direction.
package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ericlagergren/decimal"
)

// Places is the ledger's resolution: amounts are rounded to 1e-12 USD.
const Places = 12

// divisionDigits is the working precision of the one inexact operation
// (division); results are then rounded to Places in a stated direction.
const divisionDigits = 64

// Amount is an immutable exact decimal. The zero value is 0. Operations
// return new values and never modify their operands, so Amounts may be
// shared between goroutines and copied freely.
type Amount struct{ v *decimal.Big }

// Zero is the amount 0.
var Zero = Amount{}

var errNotDecimal = errors.New("not a decimal number")

func exact() decimal.Context {
	return decimal.Context{Precision: decimal.UnlimitedPrecision, RoundingMode: decimal.ToNearestEven}
}

func (a Amount) big() *decimal.Big {
	if a.v == nil {
		return decimal.WithContext(exact())
	}
	return a.v
}

func fresh() *decimal.Big { return decimal.WithContext(exact()) }

// Parse reads plain or exponent decimal text ("9.98", "1e-3", "-0.02").
// NaN, infinities and anything that is not a finite decimal are refused.
func Parse(s string) (Amount, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsAny(t, "_ ") {
		return Zero, fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	z := fresh()
	if _, ok := z.SetString(t); !ok || !z.IsFinite() {
		return Zero, fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	return Amount{z}, nil
}

// MustParse is Parse for constants known to be valid; it panics otherwise.
func MustParse(s string) Amount {
	a, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// FromInt returns the integer n as an amount.
func FromInt(n int64) Amount { return Amount{fresh().SetMantScale(n, 0)} }

// FromUint returns the unsigned integer n as an amount.
func FromUint(n uint64) Amount { return Amount{fresh().SetUint64(n)} }

// Add returns a + b exactly.
func (a Amount) Add(b Amount) Amount { return Amount{fresh().Add(a.big(), b.big())} }

// Sub returns a − b exactly.
func (a Amount) Sub(b Amount) Amount { return Amount{fresh().Sub(a.big(), b.big())} }

// Mul returns a × b exactly.
func (a Amount) Mul(b Amount) Amount { return Amount{fresh().Mul(a.big(), b.big())} }

// Neg returns −a.
func (a Amount) Neg() Amount { return Amount{fresh().Neg(a.big())} }

// QuoUp returns a ÷ b rounded up (toward +∞) to Places decimals. It is
// the division the ledger uses for debits: never undercharge. b must not
// be zero.
func (a Amount) QuoUp(b Amount) Amount { return a.quo(b).RoundUp() }

// QuoDown returns a ÷ b rounded down (toward −∞) to Places decimals.
func (a Amount) QuoDown(b Amount) Amount { return a.quo(b).RoundDown() }

func (a Amount) quo(b Amount) Amount {
	if b.Sign() == 0 {
		panic("money: division by zero")
	}
	z := decimal.WithContext(decimal.Context{Precision: divisionDigits, RoundingMode: decimal.ToZero})
	z.Quo(a.big(), b.big())
	// Truncation toward zero loses at most one unit in the 64th digit; the
	// directed rounding to Places below then gives the right answer unless
	// the exact quotient lies strictly between the truncated value and the
	// next grid point, which the remainder check corrects.
	back := fresh().Mul(z, b.big())
	if back.Cmp(a.big()) != 0 {
		// Inexact: nudge by one ulp of the working precision in the
		// quotient's own direction so directed rounding sees it as
		// "beyond" any exact grid point it was truncated onto.
		ulp := fresh().SetMantScale(1, z.Scale()+1)
		if z.Sign() < 0 || (z.Sign() == 0 && a.Sign()*b.Sign() < 0) {
			ulp.Neg(ulp)
		}
		z = fresh().Add(z, ulp)
	}
	return Amount{z}
}

// RoundUp rounds a toward +∞ to Places decimals.
func (a Amount) RoundUp() Amount { return a.round(decimal.ToPositiveInf) }

// RoundDown rounds a toward −∞ to Places decimals.
func (a Amount) RoundDown() Amount { return a.round(decimal.ToNegativeInf) }

func (a Amount) round(mode decimal.RoundingMode) Amount {
	z := fresh().Copy(a.big())
	if z.Scale() <= Places {
		return Amount{z}
	}
	z.Context.RoundingMode = mode
	z.Quantize(Places)
	z.Context = exact()
	return Amount{z}
}

// Sign is −1, 0 or +1.
func (a Amount) Sign() int { return a.big().Sign() }

// Cmp compares a and b: −1 if a < b, 0 if equal, +1 if a > b.
func (a Amount) Cmp(b Amount) int { return a.big().Cmp(b.big()) }

// Equal reports whether a and b are the same number (scale ignored).
func (a Amount) Equal(b Amount) bool { return a.Cmp(b) == 0 }

// IsZero reports whether a is 0.
func (a Amount) IsZero() bool { return a.Sign() == 0 }

// String prints a in plain notation with no exponent and no trailing
// fractional zeros: "10", "9.98", "0.000034277778", "-0.02".
func (a Amount) String() string {
	z := fresh().Copy(a.big())
	z.Reduce()
	if z.Sign() == 0 {
		return "0"
	}
	s := fmt.Sprintf("%f", z)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// MarshalJSON writes a as a JSON string holding its plain text.
func (a Amount) MarshalJSON() ([]byte, error) { return json.Marshal(a.String()) }

// UnmarshalJSON reads a decimal string or a JSON number literal; the
// number's text is parsed directly, never through float64.
func (a *Amount) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	text := string(data)
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &text); err != nil {
			return fmt.Errorf("money: %w", err)
		}
	}
	v, err := Parse(text)
	if err != nil {
		return fmt.Errorf("money: %w", err)
	}
	*a = v
	return nil
}

// ParseJSONNumber reads an amount from a JSON value's literal: a string
// holding a decimal, or a json.Number. It reports false for any other
// value.
func ParseJSONValue(v any) (Amount, bool) {
	switch t := v.(type) {
	case string:
		a, err := Parse(t)
		return a, err == nil
	case json.Number:
		a, err := Parse(t.String())
		return a, err == nil
	}
	return Zero, false
}
