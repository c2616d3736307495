package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/prices/catalog"
	"github.com/wisent/singularity/supervision/fault"
)

// pricesCmd is `singularity prices [MODEL]` (docs/brama.md#the-price-catalogue):
// what a model is charged per million tokens and from where, read from
// the same options as run.
type pricesCmd struct {
	Model            string `arg:"" optional:"" help:"Model id (default BRAMA_MODEL)."`
	DefaultModel     string `name:"brama-model" env:"BRAMA_MODEL" default:"any" help:"Model id or selector (any, any-vision-capable, best, task:…)."`
	BaseURL          string `name:"brama-base-url" env:"BRAMA_BASE_URL" default:"http://127.0.0.1:8081" help:"Brama base URL: the catalogue looks the model up with its provider first."`
	PricesFile       string `name:"brama-prices-file" env:"BRAMA_PRICES_FILE" help:"JSON file of per-model prices (it overrides the catalogue model by model)."`
	InputPerMillion  string `name:"input-price-usd-per-million" env:"BRAMA_INPUT_PRICE_USD_PER_MILLION" default:"0" help:"Price of a million prompt tokens in USD, for a model nothing else prices."`
	OutputPerMillion string `name:"output-price-usd-per-million" env:"BRAMA_OUTPUT_PRICE_USD_PER_MILLION" default:"0" help:"Price of a million completion tokens in USD, for a model nothing else prices."`
	Format           string `name:"format" default:"text" enum:"text,json" help:"Output format: text or json."`
}

// priceReport is what `prices --format json` prints: every amount an
// exact decimal string.
type priceReport struct {
	Model      string `json:"model"`
	Source     string `json:"source"`
	Provider   string `json:"provider,omitempty"`
	Catalogue  string `json:"catalogue,omitempty"`
	Input      string `json:"input_usd_per_million"`
	Cached     string `json:"cached_input_usd_per_million"`
	CacheWrite string `json:"cache_write_input_usd_per_million"`
	Output     string `json:"output_usd_per_million"`
	Free       bool   `json:"free"`
}

func (c *pricesCmd) Run(e *env) error {
	book, options, err := config.LoadPrices(config.PriceFlags{
		BaseURL: c.BaseURL, PricesFile: c.PricesFile, InputPerMillion: c.InputPerMillion, OutputPerMillion: c.OutputPerMillion,
	})
	if err != nil {
		return err
	}
	model := c.Model
	if model == "" {
		model = c.DefaultModel
	}
	pair, source := book.Charge(model, options)
	r := priceReport{
		Model: model, Source: string(source), Input: pair.Input.String(), Cached: pair.Cached().String(),
		CacheWrite: pair.CacheWrite().String(), Output: pair.Output.String(), Free: book.Free(model, options),
	}
	if source == prices.FromCatalogue {
		cat := catalog.Shipped()
		if _, p, ok := cat.Find(model, c.BaseURL); ok {
			r.Provider = p.Name
		}
		r.Catalogue = fmt.Sprintf("%s %s of %s", cat.Source, cat.Version, cat.Date)
	}
	if c.Format == "json" {
		out, err := json.Marshal(r)
		if err != nil {
			return fault.Errorf(fault.ClassRuntime, "prices: %w", err)
		}
		fmt.Fprintln(e.stdout, string(out))
		return nil
	}
	fmt.Fprint(e.stdout, r.text())
	return nil
}

// text is the report for people: where the prices come from, then each
// price per million tokens.
func (r priceReport) text() string {
	var b strings.Builder
	from := r.Source
	if r.Provider != "" {
		from += " (" + r.Provider + ", " + r.Catalogue + ")"
	}
	fmt.Fprintf(&b, "%s: %s\n", r.Model, from)
	fmt.Fprintf(&b, "  input        %s USD per million tokens\n", r.Input)
	fmt.Fprintf(&b, "  cached input %s USD per million tokens\n", r.Cached)
	fmt.Fprintf(&b, "  cache write  %s USD per million tokens\n", r.CacheWrite)
	fmt.Fprintf(&b, "  output       %s USD per million tokens\n", r.Output)
	if r.Free {
		fmt.Fprintf(&b, "  free: charged nothing for its prompt or its completion; a bearer gateway refuses it without --allow-free-model\n")
	}
	return b.String()
}
