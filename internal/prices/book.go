package prices

import "fmt"

// Source names where a model's prices come from
// (docs/brama.md#per-model-prices).
type Source string

// The sources of a model's prices, in the order they are consulted.
const (
	// FromFile is BRAMA_PRICES_FILE.
	FromFile Source = "prices file"
	// FromCatalogue is the price catalogue shipped in the binary.
	FromCatalogue Source = "catalogue"
	// FromOptions is the two price options,
	// BRAMA_INPUT_PRICE_USD_PER_MILLION and
	// BRAMA_OUTPUT_PRICE_USD_PER_MILLION.
	FromOptions Source = "price options"
)

// Book is every price a process knows: the user's prices file and,
// beneath it model by model, the shipped catalogue. The zero value knows
// no model, so every look-up falls back to the price options.
type Book struct {
	// File is BRAMA_PRICES_FILE's table; nil when unset.
	File Table
	// Catalogue is the shipped catalogue (internal/prices/catalog) for
	// the configured gateway; nil prices nothing from it.
	Catalogue Finder
}

// Finder answers a model's prices and the name of the entry that holds
// them (two ids of one model, a dated release and its alias, name the
// same entry); ok is false for a model it does not know. A Table is one.
type Finder interface {
	Find(model string) (p Pair, entry string, ok bool)
}

// Find is the table's entry for model.
func (t Table) Find(model string) (Pair, string, bool) {
	p, ok := t[model]
	return p, model, ok
}

// Find is model's prices from the file, else from the catalogue; ok is
// false when neither lists it (or model is empty).
func (b Book) Find(model string) (Pair, Source, bool) {
	if model == "" {
		return Pair{}, "", false
	}
	if p, ok := b.File[model]; ok {
		return p, FromFile, true
	}
	if b.Catalogue != nil {
		if p, _, ok := b.Catalogue.Find(model); ok {
			return p, FromCatalogue, true
		}
	}
	return Pair{}, "", false
}

// Charge is what a completion of model is charged at: Find's answer, or
// options (the two price options) when neither table lists the model.
func (b Book) Charge(model string, options Pair) (Pair, Source) {
	if p, source, ok := b.Find(model); ok {
		return p, source
	}
	return options, FromOptions
}

// Free reports whether model would be charged nothing for its prompt or
// for its completion tokens (docs/money.md#no-free-model-by-accident).
func (b Book) Free(model string, options Pair) bool {
	p, _ := b.Charge(model, options)
	return p.Input.IsZero() || p.Output.IsZero()
}

// Empty reports whether the book lists no model: every completion is
// priced by the price options.
func (b Book) Empty() bool { return len(b.File) == 0 && b.Catalogue == nil }

// Lookup is the price of one completion (docs/brama.md#per-model-prices):
// the response's model's when the book lists it, else the requested
// model's when listed; ok is false when neither is, and the caller prices
// by the price options. The file overrides the catalogue model by model,
// under another name too: a response whose model the file does not list
// but the catalogue holds in the same entry as the requested model (a
// dated release of it) pays the file's price of the requested model.
// unpriced is true when the response names a model the book does not
// list but the requested one is: the completion is then charged at the
// requested model's prices.
func (b Book) Lookup(responseModel, requestedModel string) (p Pair, ok, unpriced bool) {
	if responseModel == "" || responseModel == requestedModel {
		p, _, ok = b.Find(requestedModel)
		return p, ok, false
	}
	if p, ok := b.File[responseModel]; ok {
		return p, true, false
	}
	if b.Catalogue != nil {
		if p, entry, ok := b.Catalogue.Find(responseModel); ok {
			if own, listed := b.File[requestedModel]; listed {
				if _, same, _ := b.Catalogue.Find(requestedModel); same == entry {
					return own, true, false
				}
			}
			return p, true, false
		}
	}
	p, _, ok = b.Find(requestedModel)
	return p, ok, ok
}

// Reservation is the price a reservation of a completion of requested
// assumes before the answer names a model: the requested model's prices
// when the book lists it; otherwise the prices file's Table.Reservation
// (the highest of each price of the file and of fallback). The catalogue
// takes no part in that highest: it lists models nobody chose.
func (b Book) Reservation(requested string, fallback Pair) Pair {
	if p, _, ok := b.Find(requested); ok {
		return p
	}
	return b.File.Reservation(requested, fallback)
}

// NoPrice is the sentence refusing model, which would be charged nothing
// (Free) on a gateway that bills it; the configuration error prefixes it
// with "configuration: ".
func NoPrice(model string) string {
	return fmt.Sprintf("model %s has no price: add it to the prices file (singularity prices %s) or set --allow-free-model", model, model)
}
