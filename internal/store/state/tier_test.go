package state

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTierChangedApplies: tier_changed sets the tier a checkpoint then
// keeps ("tier", absent for none), and a load reads it back.
func TestTierChangedApplies(t *testing.T) {
	b := &Being{}
	b.Apply(TierChanged(Now(), 3, 2, mustParse("0.5")))
	if b.Tier != 2 {
		t.Fatalf("tier %d after tier_changed to 2", b.Tier)
	}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"tier":2`) {
		t.Errorf("the checkpoint does not keep the tier: %s", data)
	}
	var back Being
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Tier != 2 || len(back.Extra) != 0 {
		t.Errorf("loaded tier %d, extra %v", back.Tier, back.Extra)
	}
	b.Apply(TierChanged(Now(), 4, 0, mustParse("3")))
	if data, _ = json.Marshal(b); strings.Contains(string(data), `"tier"`) {
		t.Errorf("no tier, yet the checkpoint names one: %s", data)
	}
}
