package money

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// mustParse is Parse for an amount the test writes down.
func mustParse(s string) Amount {
	a, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestParseAndString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"10", "10"},
		{"10.000", "10"},
		{"9.98", "9.98"},
		{"0.000034277778", "0.000034277778"},
		{"-0.02", "-0.02"},
		{"-0", "0"},
		{"0.0", "0"},
		{"1e1", "10"},
		{"1E+3", "1000"},
		{"1.5e-3", "0.0015"},
		{"+7", "7"},
		{".5", "0.5"},
		{"5.", "5"},
		{"123456789012345678901234567890.123456789012345678", "123456789012345678901234567890.123456789012345678"},
		{"1e-30", "0.000000000000000000000000000001"},
		{"-1e-30", "-0.000000000000000000000000000001"},
		{"2500e-2", "25"},
		// An exponent's leading zeros, however many, are no range.
		{"1e000000000000000000000", "1"},
		{"2.5E+0000000000000000000001", "25"},
		{"25e-00000000000000000000001", "2.5"},
		{"0e-000000000000000000000000", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.String())
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{"", " 1", "1 ", "abc", "NaN", "Inf", "-Infinity", "0x10", "1_000", "1,5", "--1", "1e", "e5", ".", "1e999999999", "1e40", "1e-1001", "null", "true"} {
		t.Run(in, func(t *testing.T) {
			_, err := Parse(in)
			assert.Error(t, err)
		})
	}
}

func TestParseOutOfRange(t *testing.T) {
	for _, in := range []string{"1e40", "1e400", "-1e400", "1e-1001", "1e99999999999999999999", "1e-99999999999999999999", "12345678901234567890123456789012345678901234567890", "1e-9223372036854775809"} {
		t.Run(in, func(t *testing.T) {
			_, err := Parse(in)
			require.ErrorIs(t, err, ErrRange)
			assert.Contains(t, err.Error(), "out of range")
		})
	}
}

func TestZeroValue(t *testing.T) {
	var a Amount
	assert.Equal(t, "0", a.String())
	assert.True(t, a.IsZero())
	assert.Equal(t, "1", a.Add(FromInt(1)).String())
	b, err := json.Marshal(a)
	require.NoError(t, err)
	assert.Equal(t, `"0"`, string(b))
}

func TestArithmetic(t *testing.T) {
	tests := []struct {
		name string
		got  Amount
		want string
	}{
		{"add", mustParse("9.99").Add(mustParse("0.01")), "10"},
		{"sub", mustParse("10").Sub(mustParse("0.02")), "9.98"},
		{"sub negative", mustParse("0").Sub(mustParse("0.02")), "-0.02"},
		{"mul", mustParse("1234").Mul(mustParse("0.000002")), "0.002468"},
		{"neg", mustParse("3.5").Neg(), "-3.5"},
		{"from int", FromInt(-42), "-42"},
		{"from uint", FromUint(18446744073709551615), "18446744073709551615"},
		// 123.4 s of instance time at 1 USD/hour: 123400000000 ns / 3.6e12.
		{"quo up instance", FromInt(123400000000).QuoUp(FromInt(3600000000000)), "0.034277777778"},
		{"quo down instance", FromInt(123400000000).QuoDown(FromInt(3600000000000)), "0.034277777777"},
		{"quo up exact", FromInt(1).QuoUp(FromInt(8)), "0.125"},
		{"quo down exact", FromInt(1).QuoDown(FromInt(8)), "0.125"},
		{"quo up third", FromInt(1).QuoUp(FromInt(3)), "0.333333333334"},
		{"quo down third", FromInt(1).QuoDown(FromInt(3)), "0.333333333333"},
		{"quo up negative", FromInt(-1).QuoUp(FromInt(3)), "-0.333333333333"},
		{"quo down negative", FromInt(-1).QuoDown(FromInt(3)), "-0.333333333334"},
		{"quo up tiny", FromInt(1).QuoUp(FromInt(3600000000000000)), "0.000000000001"},
		{"quo down tiny", FromInt(1).QuoDown(FromInt(3600000000000000)), "0"},
		{"round up", mustParse("0.0000342777771").RoundUp(), "0.000034277778"},
		{"round up exact grid", mustParse("0.000034277778").RoundUp(), "0.000034277778"},
		{"round down", mustParse("0.0000342777779").RoundDown(), "0.000034277777"},
		{"round up negative", mustParse("-0.0000000000019").RoundUp(), "-0.000000000001"},
		{"round down negative", mustParse("-0.0000000000011").RoundDown(), "-0.000000000002"},
		{"round up beyond 64 digits", mustParse("1e-300").RoundUp(), "0.000000000001"},
		{"round down short", mustParse("1.5").RoundDown(), "1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got.String())
		})
	}
}

func TestOperandsUnchanged(t *testing.T) {
	a, b := mustParse("1.25"), mustParse("0.75")
	_ = a.Add(b)
	_ = a.Sub(b)
	_ = a.Mul(b)
	_ = a.QuoUp(b)
	_ = a.Neg()
	_ = mustParse("0.1234567890123456").RoundUp()
	assert.Equal(t, "1.25", a.String())
	assert.Equal(t, "0.75", b.String())
}

func TestCompare(t *testing.T) {
	assert.Equal(t, 0, mustParse("10").Cmp(mustParse("10.000")))
	assert.True(t, mustParse("10").Equal(mustParse("1e1")))
	assert.Equal(t, -1, mustParse("9.99").Cmp(mustParse("10")))
	assert.Equal(t, 1, mustParse("0.000000000001").Cmp(Zero))
	assert.Equal(t, -1, mustParse("-0.02").Sign())
}

func TestJSON(t *testing.T) {
	type doc struct {
		A Amount `json:"a"`
	}
	tests := []struct {
		in, want string
	}{
		{`{"a":"9.98"}`, "9.98"},
		{`{"a":9.98}`, "9.98"},
		{`{"a":1e-3}`, "0.001"},
		// Beyond float64's 17 significant digits: parsed from the literal.
		{`{"a":0.123456789012345678901}`, "0.123456789012345678901"},
		{`{"a":"-0.02"}`, "-0.02"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d doc
			require.NoError(t, json.Unmarshal([]byte(tt.in), &d))
			assert.Equal(t, tt.want, d.A.String())
			out, err := json.Marshal(d)
			require.NoError(t, err)
			assert.Equal(t, `{"a":"`+tt.want+`"}`, string(out))
		})
	}
	for _, bad := range []string{`{"a":null}`, `{"a":"x"}`, `{"a":true}`, `{"a":"NaN"}`, `{"a":{}}`} {
		var d doc
		assert.Error(t, json.Unmarshal([]byte(bad), &d), bad)
	}
}

func TestParseJSONValue(t *testing.T) {
	tests := []struct {
		in   any
		want string
		ok   bool
	}{
		{"1.5", "1.5", true},
		{json.Number("2e2"), "200", true},
		{"nope", "", false},
		{1.5, "", false}, // a float64 is never money
		{nil, "", false},
		{true, "", false},
	}
	for _, tt := range tests {
		a, ok := ParseJSONValue(tt.in)
		assert.Equal(t, tt.ok, ok, "%v", tt.in)
		if ok {
			assert.Equal(t, tt.want, a.String())
		}
	}
}

// TestDirectedRoundingProperty checks QuoUp/QuoDown/RoundUp/RoundDown
// against an independent big.Rat computation.
func TestDirectedRoundingProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		an := rapid.Int64().Draw(t, "an")
		as := rapid.IntRange(0, 30).Draw(t, "as")
		bn := rapid.Int64().Filter(func(v int64) bool { return v != 0 }).Draw(t, "bn")
		bs := rapid.IntRange(0, 30).Draw(t, "bs")
		a := mustParse(big.NewInt(an).String() + "e-" + itoa(as))
		b := mustParse(big.NewInt(bn).String() + "e-" + itoa(bs))
		exact := new(big.Rat).Quo(a.Rat(), b.Rat())

		up, down := a.QuoUp(b), a.QuoDown(b)
		checkGrid(t, up)
		checkGrid(t, down)
		if up.Rat().Cmp(exact) < 0 || down.Rat().Cmp(exact) > 0 {
			t.Fatalf("%s / %s: up %s down %s exact %s", a, b, up, down, exact.FloatString(40))
		}
		step := new(big.Rat).SetFrac(big.NewInt(1), pow10(Places))
		if new(big.Rat).Sub(up.Rat(), exact).Cmp(step) >= 0 || new(big.Rat).Sub(exact, down.Rat()).Cmp(step) >= 0 {
			t.Fatalf("%s / %s: not the nearest grid points: up %s down %s", a, b, up, down)
		}
		ru, rd := a.RoundUp(), a.RoundDown()
		if ru.Rat().Cmp(a.Rat()) < 0 || rd.Rat().Cmp(a.Rat()) > 0 {
			t.Fatalf("round %s: up %s down %s", a, ru, rd)
		}
		checkGrid(t, ru)
		checkGrid(t, rd)
		// Printing has no exponent and, within the range Parse accepts
		// (a quotient may leave it: 1e14 / 1e-26), parses back exactly.
		s := up.String()
		if strings.ContainsAny(s, "eE") {
			t.Fatalf("exponent in %s", s)
		}
		if back, err := Parse(s); err == nil && !back.Equal(up) {
			t.Fatalf("round trip of %s", s)
		} else if err != nil && !errors.Is(err, ErrRange) {
			t.Fatalf("%s does not parse: %v", s, err)
		}
	})
}

func checkGrid(t *rapid.T, a Amount) {
	scaled := new(big.Rat).Mul(a.Rat(), new(big.Rat).SetInt(pow10(Places)))
	if !scaled.IsInt() {
		t.Fatalf("%s is not on the 1e-12 grid", a)
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func TestHuman(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0.00"},
		{"1", "1.00"},
		{"0.985", "0.99"},
		{"12.3449", "12.34"},
		{"0.01", "0.01"},
		{"0.009999999", "0.010000"},
		{"0.0000365", "0.000037"},
		{"0.000036", "0.000036"},
		{"0.0000000004", "0.000000"},
		{"-0.0000000004", "0.000000"},
		{"-0.25", "-0.25"},
		{"-0.0000365", "-0.000037"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := mustParse(tc.in).Human(); got != tc.want {
				t.Fatalf("Human(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestStringFastPathMatchesRational holds String's digit path to the
// exact-rational text it replaces, over amounts as the ledger makes
// them: parsed, summed, multiplied and divided to 12 places, negative,
// with trailing zeros, tiny and beyond an int64's digits.
func TestStringFastPathMatchesRational(t *testing.T) {
	texts := []string{"1", "-1", "0.5", "1.50", "10", "100.000", "0.000000000001", "-0.000036", "999999.993837168607",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "0.9223372036854775807", "123456789012345678901234.5",
		"1e3", "2.5e-7", "-7e2", "0.10", "5000000000.000000000000"}
	var amounts []Amount
	for _, s := range texts {
		a, err := Parse(s)
		require.NoError(t, err, s)
		amounts = append(amounts, a)
	}
	price := mustParse("0.15")
	for i := int64(1); i < 400; i++ {
		a := FromInt(i*7919 - 1000000).QuoUp(FromInt(1_000_000))
		amounts = append(amounts, a, a.Add(price), a.Sub(price.Add(price)), a.Neg())
	}
	for _, a := range amounts {
		z := a.big()
		if z.Sign() == 0 {
			continue
		}
		assert.Equal(t, ratText(z), a.String(), "%v", z)
	}
}
