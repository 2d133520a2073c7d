package main

import (
	"os"
	"sort"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
	"github.com/spf13/pflag"
)

// pricesFlags override the price table runs are priced with.
type pricesFlags struct {
	file string
	set  []string
}

func (p *pricesFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.file, "prices", os.Getenv("SORTIE_PRICES"), "price table overriding the default one's entries, a JSON file in package pricing's format (env SORTIE_PRICES)")
	f.StringArrayVar(&p.set, "price", nil, "set one price, KEY=USD (dollars per the key's unit count, for example dynamodb.write_request_unit=0.5); repeatable")
}

// table returns the default table (or the one a host passed its worker
// processes in SORTIE_PRICE_TABLE) with the file's and the flags'
// overrides; errors are usage errors naming the flag.
func (p *pricesFlags) table() (*pricing.Table, error) {
	t, err := pricing.FromEnv(os.Getenv)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if p.file != "" {
		o, err := pricing.Load(p.file)
		if err != nil {
			return nil, usagef("--prices: %v", err)
		}
		t = t.Override(o)
	}
	for _, kv := range p.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("--price %q: want KEY=USD", kv)
		}
		if t, err = t.Set(k, v); err != nil {
			return nil, usagef("--price %q: %v", kv, err)
		}
	}
	return t, nil
}

// costLine is a run's cost in one line: the total, its components and
// the price table's version.
func costLine(c *sortie.Cost) string {
	names := make([]string, 0, len(c.Components))
	for k := range c.Components {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = strings.ReplaceAll(k, "_", " ") + " " + c.Components[k].String()
	}
	line := c.TotalNanoUSD.String()
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	line += ", prices " + c.PriceVersion
	if len(c.Unpriced) > 0 {
		line += ", no price for " + strings.Join(c.Unpriced, " ")
	}
	return line
}
