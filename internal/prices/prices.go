// Package prices is the per-model price table of BRAMA_PRICES_FILE
// (docs/brama.md#per-model-prices): which price a completion of a given
// model pays per million prompt and completion tokens. It is pure: it
// parses the file's JSON and answers look-ups; reading the file is the
// caller's.
package prices

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/wisent/singularity/internal/store/money"
)

// Pair is the price of a million prompt (Input) and completion (Output)
// tokens in USD. Neither is negative.
type Pair struct {
	Input  money.Amount
	Output money.Amount
}

// Table maps a model id to its prices. The zero value (nil) lists no
// model, so every look-up falls back to the configured pair.
type Table map[string]Pair

// The two fields of a model's entry.
const (
	fieldInput  = "input_usd_per_million"
	fieldOutput = "output_usd_per_million"
)

// Parse reads the JSON object of a prices file:
// {"<model id>": {"input_usd_per_million": "<decimal>",
// "output_usd_per_million": "<decimal>"}, …}. Both prices are required
// decimal strings ≥ 0; other fields are refused so a misspelt price is not
// read as a missing one. The error says what is wrong, naming the model;
// the caller prefixes the variable.
func Parse(data []byte) (Table, error) {
	var raw map[string]json.RawMessage
	if err := strictDecode(data, &raw); err != nil || raw == nil {
		return nil, errors.New("must be a JSON object of model prices")
	}
	if model, ok := repeatedKey(data); ok {
		return nil, fmt.Errorf("model %q is listed twice", model)
	}
	t := make(Table, len(raw))
	for _, model := range slices.Sorted(maps.Keys(raw)) {
		if model == "" {
			return nil, errors.New("a model id is empty")
		}
		var fields map[string]json.RawMessage
		if err := strictDecode(raw[model], &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("model %q: must be an object with %s and %s", model, fieldInput, fieldOutput)
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if k != fieldInput && k != fieldOutput {
				return nil, fmt.Errorf("model %q: unknown field %q", model, k)
			}
		}
		in, err := price(model, fieldInput, fields[fieldInput])
		if err != nil {
			return nil, err
		}
		out, err := price(model, fieldOutput, fields[fieldOutput])
		if err != nil {
			return nil, err
		}
		t[model] = Pair{Input: in, Output: out}
	}
	return t, nil
}

// strictDecode decodes one JSON value and refuses anything after it.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the value")
	}
	return nil
}

// repeatedKey reports the first member name that the JSON object data,
// already known to decode, repeats: decoding into a map would keep the
// last one's prices silently.
func repeatedKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

func price(model, field string, raw json.RawMessage) (money.Amount, error) {
	if raw == nil {
		return money.Zero, fmt.Errorf("model %q: %s is required", model, field)
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		return money.Zero, fmt.Errorf("model %q: %s must be a decimal string", model, field)
	}
	v, err := money.Parse(text)
	if errors.Is(err, money.ErrRange) {
		return money.Zero, fmt.Errorf("model %q: %s is out of range", model, field)
	}
	if err != nil {
		return money.Zero, fmt.Errorf("model %q: %s must be a decimal string", model, field)
	}
	if v.Sign() < 0 {
		return money.Zero, fmt.Errorf("model %q: %s cannot be negative", model, field)
	}
	return v, nil
}

// Lookup is the price of one completion (docs/brama.md#per-model-prices):
// the response's model when the table lists it, else the requested model
// when listed; ok is false when neither is, and the caller prices by the
// two configured variables.
func (t Table) Lookup(responseModel, requestedModel string) (Pair, bool) {
	if p, ok := t[responseModel]; ok && responseModel != "" {
		return p, true
	}
	p, ok := t[requestedModel]
	return p, ok
}

// Reservation is the price a reservation of a completion of requested
// assumes before the answer names a model (docs/brama.md#charging-without-usage):
// the requested model's prices when listed; for a model the table does not
// list (a selector, or an id absent from the file) the highest input and
// the highest output price of the table and of fallback, each on its own,
// so the bound holds whichever model answers.
func (t Table) Reservation(requested string, fallback Pair) Pair {
	if p, ok := t[requested]; ok {
		return p
	}
	best := fallback
	for _, p := range t {
		if p.Input.Cmp(best.Input) > 0 {
			best.Input = p.Input
		}
		if p.Output.Cmp(best.Output) > 0 {
			best.Output = p.Output
		}
	}
	return best
}
