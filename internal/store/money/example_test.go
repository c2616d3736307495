package money_test

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/store/money"
)

// A completion's cost: tokens at a price per million, divided up so the
// ledger never undercharges, then taken from the balance exactly.
func Example() {
	balance := usd("10")
	pricePerMillion := usd("0.6")
	tokens := money.FromInt(1234)

	cost := tokens.Mul(pricePerMillion).QuoUp(money.FromInt(1_000_000))
	balance = balance.Sub(cost)

	fmt.Println("cost:", cost)
	fmt.Println("balance:", balance)
	fmt.Println("shown to people:", cost.Human(), balance.Human())
	// Output:
	// cost: 0.0007404
	// balance: 9.9992596
	// shown to people: 0.000740 10.00
}

// Division rounds in a stated direction at the ledger's 12 places: up for
// what is charged, down for what is credited.
func ExampleAmount_QuoUp() {
	third := money.FromInt(1)
	fmt.Println(third.QuoUp(money.FromInt(3)))
	fmt.Println(third.QuoDown(money.FromInt(3)))
	// Output:
	// 0.333333333334
	// 0.333333333333
}

// Text is parsed without float64 and printed in plain notation; NaN,
// infinities and magnitudes out of range are refused.
func ExampleParse() {
	for _, text := range []string{"9.98", "1e-3", "-0.020", "NaN", "1e999"} {
		a, err := money.Parse(text)
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println(a)
	}
	// Output:
	// 9.98
	// 0.001
	// -0.02
	// refused: "NaN": not a decimal number
	// refused: "1e999": decimal out of range
}

// In JSON an amount is a string of its exact decimal; a number literal is
// read too, from its text.
func ExampleAmount_MarshalJSON() {
	out, _ := json.Marshal(map[string]money.Amount{"remaining": usd("0.1").Add(usd("0.2"))})
	fmt.Println(string(out))

	var a money.Amount
	_ = json.Unmarshal([]byte(`0.30000000000000004`), &a)
	fmt.Println(a)
	// Output:
	// {"remaining":"0.3"}
	// 0.30000000000000004
}

// usd is a decimal amount the examples write out; Parse refuses anything
// else.
func usd(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}
