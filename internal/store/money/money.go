// Package money is exact decimal arithmetic for every amount the runtime
// handles: balances, prices, debits and credits. It wraps
// github.com/ericlagergren/decimal so that no float64 ever touches money,
// prints amounts in the plain notation of docs/money.md#decimal-text, and
// rounds at the ledger's resolution of 12 decimal places in a stated
// direction.
package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/ericlagergren/decimal"
)

// Places is the ledger's resolution: amounts are rounded to 1e-12 USD.
const Places = 12

// The range Parse accepts. Text such as "1e999999999" is short but would
// expand to a billion digits when printed or rounded; tool output is
// untrusted, so magnitudes are bounded: |v| < 10^MaxExponent, and a
// non-zero value's leading digit sits no lower than 10^MinExponent.
const (
	MaxExponent = 40
	MinExponent = -1000
)

// Amount is an immutable exact decimal. The zero value is 0. Operations
// return new values and never modify their operands, so Amounts may be
// shared between goroutines and copied freely.
type Amount struct{ v *decimal.Big }

// Zero is the amount 0.
var Zero = Amount{}

// ErrRange is the error, wrapped, of Parse for decimal text whose
// magnitude is outside the accepted range (MaxExponent, MinExponent).
var ErrRange = errors.New("decimal out of range")

var errNotDecimal = errors.New("not a decimal number")

// decimalText is the accepted syntax: an optional sign, digits with an
// optional fraction, an optional exponent. It is a superset of the JSON
// number grammar and refuses NaN, Inf, hex and digit separators.
var decimalText = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

func exact() decimal.Context {
	return decimal.Context{Precision: decimal.UnlimitedPrecision, RoundingMode: decimal.ToNearestEven}
}

func (a Amount) big() *decimal.Big {
	if a.v == nil {
		return fresh()
	}
	return a.v
}

// scaledText is n × 10^−scale as String writes it: plain digits, a
// point only before a fraction, no trailing zeros.
func scaledText(n int64, scale int) string {
	var out []byte
	magnitude := uint64(n)
	if n < 0 {
		out = append(out, '-')
		magnitude = uint64(-n) // -minInt64 wraps to itself, which is its magnitude
	}
	digits := strconv.AppendUint(nil, magnitude, 10)
	if pad := scale + 1 - len(digits); pad > 0 { // at least one digit before the point
		digits = append(bytes.Repeat([]byte{'0'}, pad), digits...)
	}
	whole, frac := digits[:len(digits)-scale], bytes.TrimRight(digits[len(digits)-scale:], "0")
	out = append(out, whole...)
	if len(frac) > 0 {
		out = append(append(out, '.'), frac...)
	}
	return string(out)
}

func fresh() *decimal.Big { return decimal.WithContext(exact()) }

// Parse reads plain or exponent decimal text ("9.98", "1e-3", "-0.02").
// NaN, infinities, anything that is not a finite decimal and magnitudes
// outside the accepted range are refused.
func Parse(s string) (Amount, error) {
	if !decimalText.MatchString(s) {
		return Zero, fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	z := fresh()
	mantissa, text := s, s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa = s[:i]
		// The library refuses an exponent of more digits than it reads,
		// leading zeros included ("1e000000000000000000000" is 1): they
		// are dropped first.
		sign, digits := "", s[i+1:]
		if digits != "" && (digits[0] == '+' || digits[0] == '-') {
			sign, digits = digits[:1], digits[1:]
		}
		if trimmed := strings.TrimLeft(digits, "0"); len(trimmed) < len(digits) {
			if trimmed == "" {
				trimmed = "0"
			}
			text = mantissa + "e" + sign + trimmed
		}
	}
	nonZero := strings.ContainsAny(mantissa, "123456789")
	if _, ok := z.SetString(text); !ok || !z.IsFinite() {
		// The syntax is a finite decimal's: what the library refuses is
		// an exponent beyond its own range, which for a non-zero value
		// is far outside ours.
		if nonZero {
			return Zero, fmt.Errorf("%q: %w", s, ErrRange)
		}
		return Zero, fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	if z.Sign() == 0 {
		// A zero keeps its exponent as its scale ("0e-9999999" has 9999999
		// places, which Add and Rat would expand), and the library reads
		// an exponent below -2^63 as zero ("1e-9223372036854775809"): a
		// zero is returned without a scale, and only when its digits are.
		if nonZero {
			return Zero, fmt.Errorf("%q: %w", s, ErrRange)
		}
		return Zero, nil
	}
	// Leading digit's exponent: precision digits ending at 10^-scale.
	lead := z.Precision() - z.Scale() - 1
	if lead >= MaxExponent || lead < MinExponent {
		return Zero, fmt.Errorf("%q: %w", s, ErrRange)
	}
	return Amount{z}, nil
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
// the division the ledger uses for debits: never undercharge. It panics if
// b is zero.
func (a Amount) QuoUp(b Amount) Amount { return a.quo(b, true) }

// QuoDown returns a ÷ b rounded down (toward −∞) to Places decimals. It
// panics if b is zero.
func (a Amount) QuoDown(b Amount) Amount { return a.quo(b, false) }

// quo divides exactly as rationals, then takes the floor or ceiling of the
// quotient scaled by 10^Places: no working precision can be too small.
func (a Amount) quo(b Amount, up bool) Amount {
	if b.Sign() == 0 {
		panic("money: division by zero")
	}
	q := new(big.Rat).Quo(a.big().Rat(nil), b.big().Rat(nil))
	q.Mul(q, new(big.Rat).SetInt(pow10(Places)))
	n, rem := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int))
	// QuoRem truncates toward zero; move to the directed neighbour when
	// the division was inexact.
	if rem.Sign() != 0 {
		if up && q.Sign() > 0 {
			n.Add(n, big.NewInt(1))
		} else if !up && q.Sign() < 0 {
			n.Sub(n, big.NewInt(1))
		}
	}
	return Amount{fresh().SetBigMantScale(n, Places)}
}

// RoundUp rounds a toward +∞ to Places decimals.
func (a Amount) RoundUp() Amount { return a.round(decimal.ToPositiveInf) }

// RoundDown rounds a toward −∞ to Places decimals.
func (a Amount) RoundDown() Amount { return a.round(decimal.ToNegativeInf) }

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

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

// Rat returns a as an exact rational, for checks and conversions that
// need math/big.
func (a Amount) Rat() *big.Rat { return a.big().Rat(nil) }

// String prints a in plain notation with no exponent and no trailing
// fractional zeros: "10", "9.98", "0.000034277778", "-0.02".
func (a Amount) String() string {
	z := a.big()
	if z.Sign() == 0 {
		return "0"
	}
	if s := z.Scale(); s >= 0 && s <= 40 && z.IsFinite() {
		// The common case, an unscaled value that fits an int64, is
		// written from its digits; the rest takes the exact rational.
		var u decimal.Big
		if n, ok := u.Copy(z).SetScale(0).Int64(); ok {
			return scaledText(n, s)
		}
	}
	return ratText(z)
}

// ratText is String for any nonzero finite z, from its exact rational.
func ratText(z *decimal.Big) string {
	// Build the text from the exact rational and the scale so the result
	// never depends on the library's choice of notation.
	r := z.Rat(nil)
	scale := max(z.Scale(), 0)
	digits := new(big.Int).Set(r.Num()) // r is an integer when scale is 0
	if scale > 0 {
		digits.Mul(digits, pow10(scale))
		digits.Quo(digits, r.Denom()) // exact: the denominator divides 10^scale
	}
	neg := digits.Sign() < 0
	text := new(big.Int).Abs(digits).String()
	if scale > 0 {
		if len(text) <= scale {
			text = strings.Repeat("0", scale-len(text)+1) + text
		}
		whole, frac := text[:len(text)-scale], strings.TrimRight(text[len(text)-scale:], "0")
		text = whole
		if frac != "" {
			text += "." + frac
		}
	}
	if neg {
		text = "-" + text
	}
	return text
}

// MarshalJSON writes a as a JSON string holding its plain text.
func (a Amount) MarshalJSON() ([]byte, error) {
	// Plain decimal text: digits, a point and a sign, nothing to escape.
	text := a.String()
	out := make([]byte, 0, len(text)+2)
	out = append(out, '"')
	out = append(out, text...)
	return append(out, '"'), nil
}

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

// ParseJSONValue reads an amount from a decoded JSON value: a string
// holding a decimal, or a json.Number (decode with UseNumber so numbers
// never pass through float64). It reports false for any other value and
// for text Parse refuses.
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
