// Package tiers is the survival tiers of SINGULARITY_TIERS_FILE
// (docs/money.md#survival-tiers): settings a being lives by once its
// remaining balance falls below a bound, so that a poor being spends
// less per cycle (a cheaper model, a longer interval, fewer rounds). It
// is pure: it parses the file's JSON, says which tier a balance is in
// and which model comes next when one is not served; reading the file
// and applying the tier are the caller's.
package tiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/strictjson"
)

// Tier is one entry of the file. Every setting but Below is optional;
// its zero value keeps what the being has without the tier.
type Tier struct {
	// Below is the bound: the tier applies while remaining < Below.
	Below money.Amount
	// Model is the model the being switches to on entering the tier.
	Model string
	// CycleInterval is the pause between cycles within the tier, when
	// IntervalSet.
	CycleInterval time.Duration
	IntervalSet   bool
	// MaxToolRounds bounds a cycle's model rounds within the tier.
	MaxToolRounds int
}

// Table is the tiers in the file's order; a tier is named by its
// position, 1 for the first (0 is no tier).
type Table []Tier

// The fields of an entry.
const (
	fieldBelow    = "below_usd"
	fieldModel    = "model"
	fieldInterval = "cycle_interval_secs"
	fieldRounds   = "max_tool_rounds"
)

// Parse reads the JSON list of a tiers file:
// [{"below_usd": "<decimal>", "model": "…", "cycle_interval_secs": 60,
// "max_tool_rounds": 4}, …]. below_usd is required, a decimal string
// above zero, and no two tiers share it; the other fields are optional;
// any other field is refused, so a misspelt setting is not read as a
// missing one. The error names the tier (1-based) and the field; the
// caller prefixes the variable.
func Parse(data []byte) (Table, error) {
	var raw []json.RawMessage
	if err := strictjson.Decode(data, &raw); err != nil || raw == nil {
		return nil, errors.New("must be a JSON list of tiers")
	}
	t := make(Table, 0, len(raw))
	for i, entry := range raw {
		tier, err := parseTier(entry)
		if err != nil {
			return nil, fmt.Errorf("tier %d: %w", i+1, err)
		}
		for j, other := range t {
			if other.Below.Equal(tier.Below) {
				return nil, fmt.Errorf("tier %d: %s %s is tier %d's too", i+1, fieldBelow, tier.Below, j+1)
			}
		}
		t = append(t, tier)
	}
	return t, nil
}

func parseTier(entry json.RawMessage) (Tier, error) {
	var fields map[string]json.RawMessage
	if err := strictjson.Decode(entry, &fields); err != nil || fields == nil {
		return Tier{}, fmt.Errorf("must be an object with %s", fieldBelow)
	}
	if name, ok := strictjson.RepeatedKey(entry); ok {
		return Tier{}, fmt.Errorf("%s is given twice", name)
	}
	var tier Tier
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		value := fields[name]
		var err error
		switch name {
		case fieldBelow:
			tier.Below, err = bound(value)
		case fieldModel:
			if json.Unmarshal(value, &tier.Model) != nil || tier.Model == "" {
				err = fmt.Errorf("%s must be a model id", fieldModel)
			}
		case fieldInterval:
			var secs float64
			if json.Unmarshal(value, &secs) != nil || secs < 0 || math.IsInf(secs, 0) || secs > math.MaxInt64/float64(time.Second) {
				err = fmt.Errorf("%s must be a number of seconds ≥ 0", fieldInterval)
			}
			tier.CycleInterval, tier.IntervalSet = time.Duration(secs*float64(time.Second)), true
		case fieldRounds:
			if json.Unmarshal(value, &tier.MaxToolRounds) != nil || tier.MaxToolRounds < 1 {
				err = fmt.Errorf("%s must be an integer ≥ 1", fieldRounds)
			}
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return Tier{}, err
		}
	}
	if _, ok := fields[fieldBelow]; !ok {
		return Tier{}, fmt.Errorf("%s is required", fieldBelow)
	}
	return tier, nil
}

func bound(raw json.RawMessage) (money.Amount, error) {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		return money.Zero, fmt.Errorf("%s must be a decimal string", fieldBelow)
	}
	v, err := money.Parse(text)
	switch {
	case errors.Is(err, money.ErrRange):
		return money.Zero, fmt.Errorf("%s is out of range", fieldBelow)
	case err != nil:
		return money.Zero, fmt.Errorf("%s must be a decimal string", fieldBelow)
	case v.Sign() <= 0:
		return money.Zero, fmt.Errorf("%s must be above zero", fieldBelow)
	}
	return v, nil
}

// For is the tier a being with remaining lives in: of the tiers whose
// bound remaining is below, the one with the lowest bound (the hardest
// times), as its 1-based position; 0 when remaining is below none.
func (t Table) For(remaining money.Amount) int {
	best := 0
	for i, tier := range t {
		if remaining.Cmp(tier.Below) < 0 && (best == 0 || tier.Below.Cmp(t[best-1].Below) < 0) {
			best = i + 1
		}
	}
	return best
}

// Get is tier n (1-based); ok is false for 0 or a tier the table does not
// hold.
func (t Table) Get(n int) (Tier, bool) {
	if n < 1 || n > len(t) {
		return Tier{}, false
	}
	return t[n-1], true
}

// Fallback is the model a being with remaining tries after refused was
// not served (docs/brama.md#unserved-models). The models it may live on
// form a line: the model of the tier it is in, then those of the tiers
// above it that it is also in, by rising bound, then base; each once,
// tiers without a model skipped. Fallback is the model after refused in
// that line, or its first when refused is not in it (a model the being
// chose itself); "" when refused ends the line, so that a model is never
// tried twice for one refusal and the line always ends.
func (t Table) Fallback(remaining money.Amount, base, refused string) string {
	var in []Tier
	for _, tier := range t {
		if remaining.Cmp(tier.Below) < 0 {
			in = append(in, tier)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].Below.Cmp(in[j].Below) < 0 })
	var line []string
	for _, tier := range in {
		if tier.Model != "" && !slices.Contains(line, tier.Model) {
			line = append(line, tier.Model)
		}
	}
	if base != "" && !slices.Contains(line, base) {
		line = append(line, base)
	}
	next := slices.Index(line, refused) + 1 // 0 when refused is not in line
	if next < len(line) {
		return line[next]
	}
	return ""
}
