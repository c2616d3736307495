package budget

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// decimalGen draws a non-negative decimal text with up to 8 integer and
// up to 20 fractional digits, and its exact value.
func decimalGen(t *rapid.T, label string) (string, *big.Rat) {
	whole := rapid.Uint64Range(0, 99_999_999).Draw(t, label+"_whole")
	places := rapid.IntRange(0, 20).Draw(t, label+"_places")
	frac := ""
	for range places {
		frac += string(rune('0' + rapid.IntRange(0, 9).Draw(t, label+"_digit")))
	}
	text := fmt.Sprint(whole)
	if places > 0 {
		text += "." + frac
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		t.Fatalf("bad generated decimal %q", text)
	}
	return text, r
}

var grid = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(money.Places), nil))

// roundRat rounds r to 12 places, up (ceil) or down (floor), with
// math/big only: the independent model of the ledger's rounding.
func roundRat(r *big.Rat, up bool) *big.Rat {
	s := new(big.Rat).Mul(r, grid)
	q, rem := new(big.Int).QuoRem(s.Num(), s.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		if up && s.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		} else if !up && s.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		}
	}
	return new(big.Rat).Quo(new(big.Rat).SetInt(q), grid)
}

func ratEq(a money.Amount, r *big.Rat) bool { return a.Rat().Cmp(r) == 0 }

// TestLedgerProperties runs random sequences of debits and credits at
// random prices and checks, after every step: each debit part equals the
// big.Rat model rounded up, each credit the model rounded down; the
// journal invariant holds exactly; net profit = earned − api − instance =
// remaining − starting; no amount is negative.
func TestLedgerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inText, inRat := decimalGen(t, "input_price")
		outText, outRat := decimalGen(t, "output_price")
		hourText, hourRat := decimalGen(t, "instance_price")
		startText, startRat := decimalGen(t, "starting")
		p := Pricing{InputPerMillion: testkit.USD(inText), OutputPerMillion: testkit.USD(outText), InstancePerHour: testkit.USD(hourText)}
		b := state.Budget{Starting: testkit.USD(startText), Remaining: testkit.USD(startText)}
		events := []state.Event{state.Started(state.Now())}
		model := struct{ remaining, api, instance, earned *big.Rat }{new(big.Rat).Set(startRat), new(big.Rat), new(big.Rat), new(big.Rat)}

		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := range steps {
			cycle := uint64(i)
			if rapid.Bool().Draw(t, "debit") {
				u := chat.Usage{
					PromptTokens:     rapid.Uint64Range(0, 1<<40).Draw(t, "prompt"),
					CompletionTokens: rapid.Uint64Range(0, 1<<40).Draw(t, "completion"),
				}
				u.TotalTokens = u.PromptTokens + u.CompletionTokens
				elapsed := time.Duration(rapid.Int64Range(0, int64(48*time.Hour)).Draw(t, "elapsed_ns"))
				d := ComputeDebit(p, u, elapsed)

				apiExact := new(big.Rat).Add(new(big.Rat).Mul(new(big.Rat).SetFrac(new(big.Int).SetUint64(u.PromptTokens), big.NewInt(1)), inRat),
					new(big.Rat).Mul(new(big.Rat).SetFrac(new(big.Int).SetUint64(u.CompletionTokens), big.NewInt(1)), outRat))
				apiExact.Quo(apiExact, big.NewRat(1_000_000, 1))
				instExact := new(big.Rat).Mul(big.NewRat(int64(elapsed), 1), hourRat)
				instExact.Quo(instExact, big.NewRat(3_600_000_000_000, 1))
				wantAPI, wantInst := roundRat(apiExact, true), roundRat(instExact, true)
				if !ratEq(d.API, wantAPI) || !ratEq(d.Instance, wantInst) {
					t.Fatalf("debit %+v %v: got api %s instance %s, want %s %s", u, elapsed, d.API, d.Instance, wantAPI.FloatString(14), wantInst.FloatString(14))
				}
				if d.API.Rat().Cmp(apiExact) < 0 || d.Instance.Rat().Cmp(instExact) < 0 {
					t.Fatalf("undercharged")
				}
				if !d.Amount.Equal(d.API.Add(d.Instance)) || d.Amount.Sign() < 0 {
					t.Fatalf("amount %s is not api + instance", d.Amount)
				}
				b = ApplyDebit(b, d)
				events = append(events, state.ModelCompleted(state.Now(), cycle, u), state.Debited(state.Now(), cycle, d.Amount, money.Zero, 0))
				model.remaining.Sub(model.remaining, new(big.Rat).Add(wantAPI, wantInst))
				model.api.Add(model.api, wantAPI)
				model.instance.Add(model.instance, wantInst)
			} else {
				text, exact := decimalGen(t, "revenue")
				var result string
				if rapid.Bool().Draw(t, "as_number") {
					result = fmt.Sprintf(`{"ok":true,"data":[{"note":"x"},{"revenue_usd":%s}]}`, text)
				} else {
					result = fmt.Sprintf(`{"realized_profit_usd":%q}`, text)
				}
				v, ok := Revenue("finance__settle", []byte(result))
				want := roundRat(exact, false)
				if want.Sign() == 0 {
					if ok {
						t.Fatalf("credited %s for %s", v, text)
					}
				} else {
					if !ok || !ratEq(v, want) {
						t.Fatalf("credit of %s: got %s ok=%v, want %s", text, v, ok, want.FloatString(12))
					}
					if v.Rat().Cmp(exact) > 0 {
						t.Fatalf("overcredited")
					}
					var err error
					if b, err = ApplyCredit(b, v); err != nil {
						t.Fatal(err)
					}
					events = append(events, state.ToolFinished(state.Now(), cycle, "finance__settle", "success"), state.RevenueCredited(state.Now(), cycle, v, "finance__settle"))
					model.remaining.Add(model.remaining, want)
					model.earned.Add(model.earned, want)
				}
			}

			if err := testkit.CheckInvariant(b, events); err != nil {
				t.Fatal(err)
			}
			if !ratEq(b.Remaining, model.remaining) || !ratEq(b.APISpent, model.api) || !ratEq(b.InstanceSpent, model.instance) || !ratEq(b.Earned, model.earned) {
				t.Fatalf("budget %+v drifted from the model", b)
			}
			if !b.NetProfit().Equal(b.Earned.Sub(b.APISpent).Sub(b.InstanceSpent)) || !b.NetProfit().Equal(b.Remaining.Sub(b.Starting)) {
				t.Fatalf("net profit")
			}
			for _, a := range []money.Amount{b.APISpent, b.InstanceSpent, b.Earned, b.Starting} {
				if a.Sign() < 0 {
					t.Fatalf("negative amount %s", a)
				}
			}
			// The journal line round-trips the amount exactly, as plain text.
			line, err := json.Marshal(events[len(events)-1])
			if err != nil {
				t.Fatal(err)
			}
			var back state.Event
			if err := json.Unmarshal(line, &back); err != nil || !back.Amount.Equal(events[len(events)-1].Amount) || strings.ContainsAny(back.Amount.String(), "eE") {
				t.Fatalf("journal line %s: %v", line, err)
			}
		}
	})
}

// TestRecoverProperty: dropping the trailing step of a journal from the
// saved budget (a crash between journaling and saving) is recovered
// exactly by Recover.
func TestRecoverProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inText, _ := decimalGen(t, "input_price")
		hourText, _ := decimalGen(t, "instance_price")
		p := Pricing{InputPerMillion: testkit.USD(inText), OutputPerMillion: testkit.USD(inText), InstancePerHour: testkit.USD(hourText)}
		b := state.Budget{Starting: money.FromInt(100), Remaining: money.FromInt(100)}
		var events []state.Event
		var saved state.Budget
		steps := rapid.IntRange(1, 20).Draw(t, "steps")
		for i := range steps {
			saved = b
			if rapid.Bool().Draw(t, "debit") {
				u := chat.Usage{PromptTokens: rapid.Uint64Range(0, 1e6).Draw(t, "pt"), CompletionTokens: rapid.Uint64Range(0, 1e6).Draw(t, "ct")}
				u.TotalTokens = u.PromptTokens + u.CompletionTokens
				d := ComputeDebit(p, u, time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "ns")))
				b = ApplyDebit(b, d)
				events = append(events, state.ModelCompleted(state.Now(), uint64(i), u), state.Debited(state.Now(), uint64(i), d.Amount, money.Zero, 0))
			} else {
				text, _ := decimalGen(t, "rev")
				v, ok := Revenue("trading__x", []byte(`{"revenue_usd":"`+text+`"}`))
				if !ok {
					continue
				}
				b, _ = ApplyCredit(b, v)
				events = append(events, state.RevenueCredited(state.Now(), uint64(i), v, "trading__x"))
			}
		}
		lagging := rapid.Bool().Draw(t, "lagging")
		from := b
		if lagging {
			from = saved
		}
		got, _, err := Recover(from, events, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := testkit.CheckInvariant(got, events); err != nil {
			t.Fatal(err)
		}
		if !got.Remaining.Equal(b.Remaining) || !got.Earned.Equal(b.Earned) || got.TotalTokens != b.TotalTokens {
			t.Fatalf("recovered %+v, want %+v", got, b)
		}
	})
}
