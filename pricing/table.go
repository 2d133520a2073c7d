package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

//go:embed prices.json
var defaultJSON []byte

// Price is one entry of a price table: USD dollars for Per units of Unit.
type Price struct {
	// USD is the price as a decimal string of at most 12 fractional
	// digits ("0.0000133334"), never a float.
	USD string `json:"usd"`
	// Per is how many units USD buys (1, 1000, 1000000). Optional;
	// defaults to 1.
	Per int64 `json:"per,omitempty"`
	// Unit names the unit ("GB-second", "request").
	Unit string `json:"unit,omitempty"`
	// Source is the title of the page the price was read from, URL its
	// address and Read the date it was read (YYYY-MM-DD).
	Source string `json:"source,omitempty"`
	URL    string `json:"url,omitempty"`
	Read   string `json:"read,omitempty"`
	// Note says which tier, region or billing mode the price is.
	Note string `json:"note,omitempty"`

	pico *big.Int // USD in pico-dollars (10⁻¹² USD), for Per units
}

// Table is a versioned price table. Build it with [Default], [Parse] or
// [Load]; the zero value prices nothing. A Table is read-only once built
// and safe for concurrent use.
type Table struct {
	// Version names the table: the default table's date, with each
	// override's version appended after a "+".
	Version  string           `json:"version"`
	Currency string           `json:"currency,omitempty"`
	Region   string           `json:"region,omitempty"`
	Prices   map[string]Price `json:"prices"`
}

var (
	keyPattern     = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+){1,3}$`)
	versionPattern = regexp.MustCompile(`^[A-Za-z0-9._+-]{1,64}$`)
	usdPattern     = regexp.MustCompile(`^[0-9]{1,9}(\.[0-9]{1,12})?$`)
)

// Default returns the table shipped with this release (prices.json in this
// package): list prices in AWS us-east-1 and Google Cloud Tier 1 regions,
// each with its source and the date it was read.
func Default() *Table {
	t, err := Parse(defaultJSON)
	if err != nil {
		panic("pricing: the embedded price table is invalid: " + err.Error())
	}
	return t
}

// Parse decodes a price table (the format of prices.json) and checks
// every entry. Errors are [*sortie.ValidationError]s naming the field:
// "version" (1-64 characters of A-Z, a-z, 0-9, '.', '_', '+', '-'),
// "currency" (USD only), "prices.KEY" (a key of 2-4 dot-separated lower
// case names; usd a decimal of at most 12 fractional digits; per ≥ 1).
func Parse(b []byte) (*Table, error) {
	var t Table
	if err := strictjson.Unmarshal(b, &t); err != nil {
		return nil, sortie.Invalidf("prices", "not a price table: %v", err)
	}
	if !versionPattern.MatchString(t.Version) {
		return nil, sortie.Invalidf("version", "%.70q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_', '+' or '-'", t.Version)
	}
	if t.Currency != "" && t.Currency != "USD" {
		return nil, sortie.Invalidf("currency", "%.10q: only USD is supported", t.Currency)
	}
	for k, p := range t.Prices {
		if err := p.check(k); err != nil {
			return nil, err
		}
		t.Prices[k] = p
	}
	return &t, nil
}

// Load reads and parses the price table in file path.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: read price table: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("pricing: price table %s: %w", path, err)
	}
	return t, nil
}

// check validates p under key k and sets its exact value.
func (p *Price) check(k string) error {
	field := "prices." + k
	if !keyPattern.MatchString(k) {
		return sortie.Invalidf(field, "the key must be 2-4 dot-separated names of a-z, 0-9 and '_'")
	}
	if !usdPattern.MatchString(p.USD) {
		return sortie.Invalidf(field+".usd", "%.40q must be a decimal number of dollars with at most 12 fractional digits", p.USD)
	}
	if p.Per == 0 {
		p.Per = 1
	}
	if p.Per < 1 || p.Per > 1e12 {
		return sortie.Invalidf(field+".per", "%d outside 1..10¹²", p.Per)
	}
	whole, frac, _ := strings.Cut(p.USD, ".")
	digits := whole + frac + strings.Repeat("0", 12-len(frac))
	p.pico, _ = new(big.Int).SetString(digits, 10)
	return nil
}

// Override returns a new table: t with every price of o replacing or
// adding t's under the same key, versioned "T.Version+O.Version".
func (t *Table) Override(o *Table) *Table {
	n := &Table{Version: t.Version + "+" + o.Version, Currency: t.Currency, Region: t.Region,
		Prices: maps.Clone(t.Prices)}
	if n.Prices == nil {
		n.Prices = map[string]Price{}
	}
	maps.Copy(n.Prices, o.Prices)
	if o.Region != "" {
		n.Region = o.Region
	}
	return n
}

// Set returns a new table: t with the price of key set to usd dollars per
// its current Per units, versioned t.Version plus "+set". It is what a
// command-line flag KEY=USD does. A key t has no price for is refused
// with a [*sortie.ValidationError] listing t's keys (a price table
// file, see [Table.Override], adds keys).
func (t *Table) Set(key, usd string) (*Table, error) {
	p, ok := t.Prices[key]
	if !ok {
		return nil, sortie.Invalidf("prices."+clip(key), "%.80q is not a key of price table %s; its keys: %s (a price table file adds keys)",
			key, t.Version, strings.Join(t.Keys(), ", "))
	}
	p.USD, p.Source, p.URL, p.Read, p.Note = usd, "set by the deployment", "", "", ""
	if err := p.check(key); err != nil {
		return nil, err
	}
	n := t.Override(&Table{Version: "set", Prices: map[string]Price{key: p}})
	if strings.HasSuffix(t.Version, "+set") {
		n.Version = t.Version
	}
	return n, nil
}

// clip is at most the first 80 bytes of a key, for a field name.
func clip(k string) string { return k[:min(len(k), 80)] }

// Keys returns the table's price keys, sorted.
func (t *Table) Keys() []string { return slices.Sorted(maps.Keys(t.Prices)) }

// EnvTable is the environment variable that carries a whole price table
// as JSON (the format of prices.json) to a process that prices runs or
// enforces budgets: a host passes its table, overrides included, to its
// worker processes; a cloud worker's deployment sets it to the hosts'
// table.
const EnvTable = "SORTIE_PRICE_TABLE"

// FromEnv returns the table of [EnvTable] read through getenv
// (os.Getenv), or [Default] when it is unset. A table that does not parse
// is a [*sortie.ValidationError] naming the variable.
func FromEnv(getenv func(string) string) (*Table, error) {
	v := getenv(EnvTable)
	if v == "" {
		return Default(), nil
	}
	t, err := Parse([]byte(v))
	if err != nil {
		return nil, sortie.Invalidf(EnvTable, "%v", err)
	}
	return t, nil
}

// Env returns the [EnvTable] setting that carries t.
func (t *Table) Env() string {
	b, err := json.Marshal(t)
	if err != nil {
		panic("pricing: encode table: " + err.Error()) // strings and integers always encode
	}
	return EnvTable + "=" + string(b)
}
