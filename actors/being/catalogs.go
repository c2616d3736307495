package being

import (
	"encoding/json"
	"sync"
	"weak"

	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/wire/chat"
)

// Beings with the same tools share one catalogue
// (docs/family.md#families-of-thousands): the registered catalogue, the
// tool list sent to the model and its size are built once per distinct
// Las tool list and extras (Most, the family tools), and every being that has that list
// points at the same, never modified, value. The table holds them
// weakly: a catalogue no being uses any more is collected, and its entry
// is dropped the next time the table grows.
var catalogs = struct {
	sync.Mutex
	byKey map[string]weak.Pointer[catalogView]
}{byKey: map[string]weak.Pointer[catalogView]{}}

// sharedCatalog returns the catalogue of lasTools with the extras,
// building it if no living being has it yet.
func sharedCatalog(lasTools []chat.Tool, extras catalog.Extras) (*catalogView, error) {
	listed, err := json.Marshal(lasTools)
	if err != nil {
		return nil, err
	}
	key := string(listed)
	if extras.Most {
		key = "most+" + key
	}
	if extras.Family {
		key = "family+" + key
	}
	catalogs.Lock()
	defer catalogs.Unlock()
	if view := catalogs.byKey[key].Value(); view != nil {
		return view, nil
	}
	cat, err := catalog.Standard(lasTools, extras)
	if err != nil {
		return nil, err
	}
	tools := cat.Tools()
	encoded, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	view := &catalogView{cat: cat, tools: tools, encoded: encoded, bytes: len(encoded)}
	for k, p := range catalogs.byKey {
		if p.Value() == nil {
			delete(catalogs.byKey, k)
		}
	}
	catalogs.byKey[key] = weak.Make(view)
	return view, nil
}
