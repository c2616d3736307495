// Generates internal/prices/catalog/catalog.json, the price catalogue the
// binary embeds (docs/brama.md#the-price-catalogue), from the pinned
// @pydantic/genai-prices package: `make prices` runs it. The output is
// deterministic for one package version and one date.
//
// Each price is written as the decimal text of the source's number (the
// shortest text that reads back as it, which is the source's own text).
// What is kept of a model's prices, so the ledger never charges less
// than the provider may bill:
//   - of prices that change on a date, those in force on the date of
//     generation;
//   - of prices that change with the time of day, the highest of each;
//   - of prices tiered by prompt size, the base tier (prompts under the
//     first tier's start, 200,000 tokens where there is one).
import { readFileSync, writeFileSync } from 'node:fs'
import { findProvider } from '@pydantic/genai-prices'

const PROVIDERS = ['openai', 'anthropic', 'google', 'deepseek', 'mistral', 'x-ai', 'openrouter']
const FIELDS = {
  input_mtok: 'input_usd_per_million',
  output_mtok: 'output_usd_per_million',
  cache_read_mtok: 'cached_input_usd_per_million',
  cache_write_mtok: 'cache_write_input_usd_per_million',
}

const [out, date] = process.argv.slice(2)
if (!out || !/^\d{4}-\d{2}-\d{2}$/.test(date ?? '')) {
  console.error('usage: node generate.mjs OUT.json YYYY-MM-DD')
  process.exit(2)
}
const pkg = JSON.parse(readFileSync(new URL('./node_modules/@pydantic/genai-prices/package.json', import.meta.url)))

// base is a price's base tier.
const base = (v) => (typeof v === 'object' && v !== null ? v.base : v)

// current is the prices of a model on date, each field at its highest
// over the time-of-day variants.
function current(prices) {
  if (!Array.isArray(prices)) return pick(prices)
  let dated = null
  let since = ''
  const daily = []
  for (const c of prices) {
    const k = c.constraint
    if (k?.type === 'time_of_date') daily.push(c.prices)
    else if (!k && dated === null) dated = c.prices
    else if (k?.type === 'start_date' && k.start_date <= date && k.start_date >= since) {
      dated = c.prices
      since = k.start_date
    }
  }
  const p = dated ? pick(dated) : {}
  for (const d of daily) {
    for (const [field, v] of Object.entries(pick(d))) {
      if (p[field] === undefined || v > p[field]) p[field] = v
    }
  }
  return p
}

function pick(prices) {
  const p = {}
  for (const [from, to] of Object.entries(FIELDS)) {
    const v = base(prices[from])
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) p[to] = v
  }
  return p
}

// matches is the model ids (equals) and id prefixes (starts_with) a
// model's match logic names; other logic (regex, contains, …) is left
// out, and the model's own id always matches.
function matches(model) {
  const ids = new Set([model.id])
  const prefixes = new Set()
  const walk = (m) => {
    if (m.equals !== undefined) ids.add(m.equals)
    else if (m.starts_with !== undefined) prefixes.add(m.starts_with)
    else if (m.or) m.or.forEach(walk)
  }
  walk(model.match)
  return { ids: [...ids].sort(), prefixes: [...prefixes].sort() }
}

const decimal = (v) => String(v)
const providers = PROVIDERS.map((id) => {
  const p = findProvider({ providerId: id })
  if (!p) throw new Error(`provider ${id} is not in the package`)
  const models = []
  for (const m of p.models) {
    const price = current(m.prices)
    if (price.input_usd_per_million === undefined || price.output_usd_per_million === undefined) continue
    const entry = { id: m.id, ...matches(m) }
    for (const to of Object.values(FIELDS)) {
      if (price[to] !== undefined) entry[to] = decimal(price[to])
    }
    if (entry.prefixes.length === 0) delete entry.prefixes
    models.push(entry)
  }
  models.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return { id: p.id, name: p.name, api_pattern: p.api_pattern, models }
})

const catalogue = { source: pkg.name, version: pkg.version, date, providers }
writeFileSync(out, JSON.stringify(catalogue, null, 1) + '\n')
console.error(`${out}: ${providers.map((p) => `${p.id} ${p.models.length}`).join(', ')}`)
