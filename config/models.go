package config

import (
	"maps"
	"slices"
)

// Models are the model ids the configuration names: BRAMA_MODEL and every
// model of BRAMA_PRICES_FILE, sorted, each once. The metrics label
// completions by them (docs/debug.md#metrics).
func (b Brama) Models() []string {
	set := map[string]bool{b.Model: true}
	for m := range b.Prices.File {
		set[m] = true
	}
	return slices.Sorted(maps.Keys(set))
}
