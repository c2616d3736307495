package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// parseSeeds are realistic amounts and the edges of docs/money.md: the
// range bounds, exponents, signs, and text Parse must refuse.
var parseSeeds = []string{
	"0", "-0", "+0", "0.0", "10", "10.000", "9.98", "-0.02", "0.000034277778",
	"1e1", "1E+3", "1.5e-3", "2500e-2", ".5", "5.", "+7", "007", "0.000000000001",
	"123456789012345678901234567890.123456789012345678",
	"9999999999999999999999999999999999999999", "1e39", "9.9e39", "1e40", "10e39", "0.1e41",
	"1e-1000", "1e-1001", "0.01e-998", "10e-1001", "0e999999999", "0e-99999999999",
	"1e999999999", "1e-999999999", "1e2147483648", "-1e-30", "0e-9999999", "-0.000e-2147483648",
	"1e-9223372036854775809", "0.0e-9223372036854775809", "1e9223372036854775808",
	"", " 1", "1 ", "abc", "NaN", "nan", "Inf", "-Infinity", "0x10", "1_000", "1,5", "--1",
	"1e", "e5", ".", "+", "-.", "1e+", "1.2.3", "١", "1\n", "null", "true",
}

// FuzzParse checks Parse against an independent reading of
// docs/money.md#budget: the syntax is an optional sign, digits with an
// optional fraction and an optional exponent; a value is accepted exactly
// when it is zero or its leading digit lies in [10^MinExponent,
// 10^MaxExponent); an accepted value is the exact number the text denotes,
// prints in plain notation (docs/money.md#decimal-text) and parses back to
// itself. It also checks that ParseJSONValue and the JSON string form
// agree with Parse.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return // keep the exact arithmetic below cheap
		}
		a, err := Parse(s)
		want, syntaxOK, inRange := oracleDecimal(s)

		if _, ok := ParseJSONValue(s); ok != (err == nil) {
			t.Fatalf("ParseJSONValue(%q) = %v, Parse error %v", s, ok, err)
		}
		if _, ok := ParseJSONValue(json.Number(s)); ok != (err == nil) {
			t.Fatalf("ParseJSONValue(json.Number(%q)) = %v, Parse error %v", s, ok, err)
		}
		quoted, _ := json.Marshal(s)
		var fromJSON Amount
		jerr := json.Unmarshal(quoted, &fromJSON)
		if (jerr == nil) != (err == nil) {
			t.Fatalf("JSON string %s: %v, Parse error %v", quoted, jerr, err)
		}

		if err != nil {
			if a != Zero {
				t.Fatalf("Parse(%q) failed but returned %v", s, a)
			}
			switch {
			case !syntaxOK:
				if !errors.Is(err, errNotDecimal) {
					t.Fatalf("Parse(%q): %v, want a not-a-decimal error", s, err)
				}
			case !inRange:
				// Out of range, an exponent too large for the library
				// included.
				if !errors.Is(err, ErrRange) {
					t.Fatalf("Parse(%q): %v", s, err)
				}
			case want != nil && want.Sign() == 0:
				// Zero with an exponent beyond the library's int32
				// exponent ("0e99999999999"): refusing it is harmless.
				if !errors.Is(err, errNotDecimal) {
					t.Fatalf("Parse(%q): %v", s, err)
				}
			default:
				t.Fatalf("Parse(%q) refused a valid in-range decimal: %v", s, err)
			}
			return
		}

		if !syntaxOK || !inRange {
			t.Fatalf("Parse(%q) accepted %s (syntax ok %v, in range %v)", s, a, syntaxOK, inRange)
		}
		// The range exists so that no short text expands into huge
		// numbers: an accepted amount has no more decimal places than its
		// text and the range allow (checked before any arithmetic, which
		// would otherwise expand them).
		if a.v != nil {
			if sc := a.v.Scale(); sc > len(s)-MinExponent || sc < -(MaxExponent+len(s)) {
				t.Fatalf("Parse(%q) carries scale %d", s, sc)
			}
		}
		if a.Rat().Cmp(want) != 0 {
			t.Fatalf("Parse(%q) = %s, want %s", s, a, want.RatString())
		}
		if !fromJSON.Equal(a) {
			t.Fatalf("JSON string %s = %s, Parse gives %s", quoted, fromJSON, a)
		}
		checkPrinted(t, a)
		checkPrinted(t, a.Neg())

		// The JSON forms: the string written by MarshalJSON reads back,
		// and a JSON number literal is read from its digits.
		out, err := json.Marshal(a)
		if err != nil || string(out) != `"`+a.String()+`"` {
			t.Fatalf("MarshalJSON(%s) = %s, %v", a, out, err)
		}
		if json.Valid([]byte(s)) {
			var n Amount
			if err := json.Unmarshal([]byte(s), &n); err != nil || !n.Equal(a) {
				t.Fatalf("JSON number %s = %s, %v; want %s", s, n, err, a)
			}
		}

		// Directed rounding stays on the correct side, on the 1e-12 grid.
		up, down := a.RoundUp(), a.RoundDown()
		if up.Cmp(a) < 0 || down.Cmp(a) > 0 || !onGrid(up) || !onGrid(down) {
			t.Fatalf("rounding %s: up %s down %s", a, up, down)
		}
		if !a.Sub(a).IsZero() || !a.Add(Zero).Equal(a) || a.Sign() != want.Sign() {
			t.Fatalf("arithmetic identities fail for %s", a)
		}
	})
}

// FuzzUnmarshalJSON checks Amount.UnmarshalJSON, reached through
// encoding/json as the runtime reaches it, against ParseJSONValue on the
// same document decoded with UseNumber: a JSON string holding a decimal
// or a number literal is an amount, read from its text; anything else
// (null, booleans, objects, arrays, malformed JSON) is refused.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`"9.98"`, `9.98`, `1e-3`, `-0.02`, `"-0.02"`, `0.123456789012345678901`, `" 1"`, `"1e40"`,
		`1e40`, `"\u0031.5"`, `null`, `true`, `{}`, `[]`, `"x"`, `"NaN"`, `01`, `1.`, `.5`, `+1`,
		` 7 `, `"7" `, `"7"x`, `""`, `"`, `-`, `1e999999999`, `-0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		var a Amount
		err := json.Unmarshal(data, &a)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("accepted malformed JSON %q as %s", data, a)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if derr := dec.Decode(&v); derr != nil {
			t.Fatalf("valid JSON %q does not decode: %v", data, derr)
		}
		want, ok := ParseJSONValue(v)
		if ok != (err == nil) {
			t.Fatalf("json.Unmarshal(%q): %v, ParseJSONValue(%#v) = %v", data, err, v, ok)
		}
		if ok && !a.Equal(want) {
			t.Fatalf("json.Unmarshal(%q) = %s, want %s", data, a, want)
		}
		// Decoded without UseNumber a number is a float64, which is never
		// money: only the string form may survive.
		var fv any
		_ = json.Unmarshal(data, &fv)
		if _, ok := ParseJSONValue(fv); ok {
			if _, isString := fv.(string); !isString {
				t.Fatalf("ParseJSONValue accepted %T %v", fv, fv)
			}
		}
	})
}

// checkPrinted asserts that a prints in plain notation and parses back to
// itself.
func checkPrinted(t *testing.T, a Amount) {
	t.Helper()
	s := a.String()
	if !plainText(s) {
		t.Fatalf("String() = %q, not plain decimal text", s)
	}
	back, err := Parse(s)
	if err != nil || !back.Equal(a) || back.String() != s {
		t.Fatalf("round trip of %q: %v, %v", s, back, err)
	}
}

// plainText reports whether s is -?digits(.digits)? with no leading zeros,
// no trailing fractional zeros, no exponent and no negative zero.
func plainText(s string) bool {
	if s == "0" {
		return true
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, hasFrac := strings.Cut(s, ".")
	if whole == "" || !allDigits(whole) || (len(whole) > 1 && whole[0] == '0') {
		return false
	}
	if hasFrac && (frac == "" || !allDigits(frac) || frac[len(frac)-1] == '0') {
		return false
	}
	if whole == "0" && !hasFrac && neg {
		return false // "-0"
	}
	return true
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func onGrid(a Amount) bool {
	return new(big.Rat).Mul(a.Rat(), new(big.Rat).SetInt(pow10(Places))).IsInt()
}

// oracleDecimal scans s by hand (no regular expression, no decimal
// library). syntaxOK is whether s is [+-]? (digits [. digits*] | . digits)
// ([eE] [+-]? digits)?; inRange is whether the value is zero or has its
// leading digit at 10^lead with MinExponent <= lead < MaxExponent. want is
// the exact value when it is cheap to build (in range), else nil.
func oracleDecimal(s string) (want *big.Rat, syntaxOK, inRange bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	whole := s[start:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
	}
	if whole == "" && frac == "" {
		return nil, false, false
	}
	exp := new(big.Int)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ds := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == ds {
			return nil, false, false
		}
		exp.SetString(s[es:i], 10)
	}
	if i != len(s) {
		return nil, false, false
	}
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return new(big.Rat), true, true
	}
	// value = digits × 10^(exp − len(frac)); its leading digit sits at
	// 10^(len(digits) − 1 + exp − len(frac)).
	shift := new(big.Int).Sub(exp, big.NewInt(int64(len(frac))))
	lead := new(big.Int).Add(shift, big.NewInt(int64(len(digits)-1)))
	if lead.Cmp(big.NewInt(MaxExponent)) >= 0 || lead.Cmp(big.NewInt(MinExponent)) < 0 {
		return nil, true, false
	}
	n, _ := new(big.Int).SetString(digits, 10)
	if neg {
		n.Neg(n)
	}
	v := new(big.Rat).SetInt(n)
	sh := shift.Int64() // bounded: |lead| <= 1000 and len(digits) <= 4096
	p := new(big.Rat).SetInt(pow10(int(max(sh, -sh))))
	if sh >= 0 {
		v.Mul(v, p)
	} else {
		v.Quo(v, p)
	}
	return v, true, true
}
