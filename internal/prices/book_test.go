package prices

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBook: the file overrides the catalogue model by model, the price
// options price the rest, a model is free when either of its two prices
// is 0, a response naming an unpriced model is charged at the requested
// model's prices and says so, and a reservation for an unlisted model
// takes the highest of the file, never of the catalogue.
func TestBook(t *testing.T) {
	b := Book{
		File:      Table{"a": pair("9", "9"), "half": pair("1", "0")},
		Catalogue: Table{"a": pair("1", "2"), "b": pair("3", "4"), "huge": pair("150", "600")},
	}
	options := pair("0", "0")
	cases := []struct {
		model, want string
		source      Source
		free        bool
	}{
		{"a", "9/9/9/9", FromFile, false},
		{"b", "3/4/3/3", FromCatalogue, false},
		{"c", "0/0/0/0", FromOptions, true},
		{"half", "1/0/1/1", FromFile, true},
		{"", "0/0/0/0", FromOptions, true},
	}
	for _, c := range cases {
		p, source := b.Charge(c.model, options)
		assert.Equal(t, c.source, source, c.model)
		assert.Equal(t, c.want, text(p), c.model)
		assert.Equal(t, c.free, b.Free(c.model, options), c.model)
	}
	assert.False(t, b.Free("c", pair("1", "2")), "the price options price it")

	p, ok, unpriced := b.Lookup("b", "a")
	assert.True(t, ok)
	assert.False(t, unpriced)
	assert.Equal(t, "3/4/3/3", text(p))
	p, ok, unpriced = b.Lookup("c", "a")
	assert.True(t, ok)
	assert.True(t, unpriced, "the response named a model without a price")
	assert.Equal(t, "9/9/9/9", text(p))
	_, ok, unpriced = b.Lookup("c", "d")
	assert.False(t, ok)
	assert.False(t, unpriced)
	_, _, unpriced = b.Lookup("", "a")
	assert.False(t, unpriced, "a response that names no model is the requested one")

	// A dated release the file does not list, of a model it does: the
	// file's price, not the catalogue's.
	dated := Book{File: Table{"m": pair("9", "9")}, Catalogue: aliases{"m": "e", "m-2026": "e", "n": "f"}}
	p, ok, unpriced = dated.Lookup("m-2026", "m")
	assert.True(t, ok)
	assert.False(t, unpriced)
	assert.Equal(t, "9/9/9/9", text(p))
	p, _, _ = dated.Lookup("n", "m")
	assert.Equal(t, "1/1/1/1", text(p), "another model: the catalogue's price")

	assert.Equal(t, "3/4/3/3", text(b.Reservation("b", options)))
	assert.Equal(t, "9/9/9/9", text(b.Reservation("c", options)), "the file's highest, not the catalogue's")
	assert.True(t, Book{}.Empty())
	assert.False(t, b.Empty())
}

// aliases is a catalogue whose every model costs 1/1 and names the entry
// the map gives.
type aliases map[string]string

func (a aliases) Find(model string) (Pair, string, bool) {
	entry, ok := a[model]
	return pair("1", "1"), entry, ok
}
