package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnpricedTierAndRepeatedPriceRefused: a prices file that gives a
// price twice in one entry, and a tiers file whose tier switches to a
// model the prices file does not list, are refused by once, run and
// doctor with their sentence, exit 2, before anything starts
// (docs/brama.md#per-model-prices, docs/money.md#survival-tiers).
func TestUnpricedTierAndRepeatedPriceRefused(t *testing.T) {
	w := newWorld(t)
	file := func(name, text string) string {
		path := filepath.Join(w.dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	prices := file("prices.json", `{"gpt-big": {"input_usd_per_million": "3", "output_usd_per_million": "15"}}`)
	repeated := file("repeated.json", `{"gpt-big": {"input_usd_per_million": "100", "output_usd_per_million": "15", "input_usd_per_million": "0"}}`)
	tiers := file("tiers.json", `[{"below_usd": "5", "model": "gpt-big"}, {"below_usd": "1", "model": "gpt-small"}]`)
	cases := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"a price given twice", map[string]string{"BRAMA_PRICES_FILE": repeated},
			`configuration: BRAMA_PRICES_FILE: model "gpt-big": input_usd_per_million is given twice`},
		{"a tier model without a price", map[string]string{"BRAMA_PRICES_FILE": prices, "SINGULARITY_TIERS_FILE": tiers},
			`configuration: SINGULARITY_TIERS_FILE: tier 2: model "gpt-small" has no price in BRAMA_PRICES_FILE`},
	}
	for _, c := range cases {
		for _, command := range []string{"once", "run", "doctor"} {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				env := w.env()
				for k, v := range c.set {
					env[k] = v
				}
				r := run(t, env, command)
				assert.Equal(t, 2, r.code, r.stderr)
				assert.Equal(t, "singularity: "+c.want+"\n", r.stderr)
				assert.Empty(t, r.stdout)
				_, err := os.Stat(env["SINGULARITY_STATE_DIR"])
				assert.True(t, os.IsNotExist(err), "nothing was started")
			})
		}
	}
}
