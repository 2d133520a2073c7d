package pricing_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// The default table covers what the issue asks for, and every price names
// its source page and the date it was read.
func TestDefaultTableHasSourcesAndDates(t *testing.T) {
	table := pricing.Default()
	for _, k := range []string{"lambda.arm64.gb_second", "lambda.x86_64.gb_second", "lambda.request",
		"cloudrun.request.vcpu_second", "cloudrun.request.gib_second", "cloudrun.request.request",
		"cloudrun.instance.vcpu_second", "cloudrun.instance.gib_second", "cloudrun.job.vcpu_second", "cloudrun.job.gib_second",
		"dynamodb.write_request_unit", "dynamodb.read_request_unit", "kms.aws.request", "kms.gcp.request",
		"s3.put_request", "s3.get_request", "gcs.class_a_operation", "gcs.class_b_operation", "local.second"} {
		if _, ok := table.Prices[k]; !ok {
			t.Errorf("default table has no %s", k)
		}
	}
	date := regexp.MustCompile(`^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`)
	for _, k := range table.Keys() {
		p := table.Prices[k]
		if p.Source == "" || !date.MatchString(p.Read) || p.Unit == "" {
			t.Errorf("price %s = %+v, want a source, a unit and a read date", k, p)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct{ json, field string }{
		{`{"version":"","prices":{}}`, "version"},
		{`{"version":"a b","prices":{}}`, "version"},
		{`{"version":"v","currency":"EUR","prices":{}}`, "currency"},
		{`{"version":"v","prices":{"Lambda":{"usd":"1"}}}`, "prices.Lambda"},
		{`{"version":"v","prices":{"lambda.request":{"usd":"0.2e-6"}}}`, "prices.lambda.request.usd"},
		{`{"version":"v","prices":{"lambda.request":{"usd":"-1"}}}`, "prices.lambda.request.usd"},
		{`{"version":"v","prices":{"lambda.request":{"usd":"0.0000000000001"}}}`, "prices.lambda.request.usd"},
		{`{"version":"v","prices":{"lambda.request":{"usd":"1","per":-5}}}`, "prices.lambda.request.per"},
		{`{"version":"v","prices":{},"extra":1}`, "prices"},
	} {
		_, err := pricing.Parse([]byte(tc.json))
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Parse(%s) = %v, want a ValidationError for %s", tc.json, err, tc.field)
		}
	}
}

// A deployment overrides prices with a file (negotiated or regional
// prices) and with flags; the version says so and the cost follows.
func TestOverrideFileAndSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acme.json")
	err := os.WriteFile(path, []byte(`{"version":"acme-2027","region":"eu-west-1",
		"prices":{"lambda.request":{"usd":"0.10","per":1000000,"unit":"request","source":"contract 42","read":"2026-11-30"}}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	over, err := pricing.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	table := pricing.Default().Override(over)
	if table.Version != "2026-12-02+acme-2027" || table.Prices["lambda.request"].Source != "contract 42" {
		t.Errorf("Override = version %q request %+v, want 2026-12-02+acme-2027 from contract 42", table.Version, table.Prices["lambda.request"])
	}
	set, err := table.Set("dynamodb.write_request_unit", "1.25")
	if err != nil {
		t.Fatal(err)
	}
	run := &sortie.Run{Attempts: []sortie.Attempt{{Number: 1, Ref: &sortie.Ref{Provider: "lambda"}, Usage: &sortie.Usage{WriteUnits: 2}}}}
	// 1 request × $0.10/10⁶ = 100; 2 WRU × $1.25/10⁶ (per stays 10⁶) = 2500
	if c := set.Price(run); c.TotalNanoUSD != 2600 || c.PriceVersion != "2026-12-02+acme-2027+set" {
		t.Errorf("Price after Set = %d n$ version %q, want 2600 and 2026-12-02+acme-2027+set", c.TotalNanoUSD, c.PriceVersion)
	}
	if pricing.Default().Prices["lambda.request"].USD != "0.20" {
		t.Errorf("Override changed the default table")
	}
	if _, err := table.Set("dynamodb.write_request_unit", "cheap"); err == nil || !strings.Contains(err.Error(), "usd") {
		t.Errorf("Set(cheap) = %v, want an error naming usd", err)
	}
	var ve *sortie.ValidationError
	_, err = table.Set("bogus.key", "1")
	if !errors.As(err, &ve) || ve.Field != "prices.bogus.key" || !strings.Contains(ve.Reason, `"bogus.key" is not a key of price table 2026-12-02+acme-2027`) ||
		!strings.Contains(ve.Reason, "local.second, s3.get_request") {
		t.Errorf("Set(bogus.key) = %v, want a ValidationError naming the key and listing the table's keys", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":"v","prices":{"a.b":{"usd":"0.1","per":10}}}`))
	f.Add([]byte(`{"version":"v","prices":{"a.b":{"usd":"0.1"},"a.b":{"usd":"0.2"}}}`))
	f.Add([]byte(`{"version":"v","prices":{"lambda.x86_64.gb_second":{"usd":"999999999.9"},"lambda.request":{"usd":"999999999.9"},"kms.aws.request":{"usd":"999999999"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		table, err := pricing.Parse(b)
		if err != nil {
			return
		}
		run := &sortie.Run{Attempts: []sortie.Attempt{{Number: 1, Ref: &sortie.Ref{Provider: "lambda"},
			Usage: &sortie.Usage{BilledDurationMs: 1 << 40, MemoryMB: 10240, WriteUnits: 1e9, KMSRequests: 1 << 40}}}}
		if c := table.Price(run); c.TotalNanoUSD < 0 {
			t.Errorf("Price = %d, negative", c.TotalNanoUSD)
		}
	})
}

// A table crosses to another process through the environment unchanged.
func TestEnvRoundTrip(t *testing.T) {
	set, err := pricing.Default().Set("local.second", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(set.Env(), "=")
	got, err := pricing.FromEnv(func(name string) string {
		if name == k {
			return v
		}
		return ""
	})
	if err != nil || got.Version != set.Version || got.Prices["local.second"].USD != "0.5" {
		t.Fatalf("FromEnv(Env()) = version %q local.second %+v, %v; want %q and 0.5", got.Version, got.Prices["local.second"], err, set.Version)
	}
	run := &sortie.Run{Attempts: []sortie.Attempt{{Number: 1, Ref: &sortie.Ref{Provider: "local"}, Usage: &sortie.Usage{DurationMs: 1000}}}}
	if c := got.Price(run); c.TotalNanoUSD != 500_000_000 {
		t.Errorf("the table from the environment prices 1 s at %d n$, want 500,000,000", c.TotalNanoUSD)
	}
	if d, err := pricing.FromEnv(func(string) string { return "" }); err != nil || d.Version != pricing.Default().Version {
		t.Errorf("FromEnv(unset) = %v, %v; want the default table", d, err)
	}
	var ve *sortie.ValidationError
	if _, err := pricing.FromEnv(func(string) string { return "{" }); !errors.As(err, &ve) || ve.Field != pricing.EnvTable {
		t.Errorf("FromEnv(bad JSON) = %v, want a ValidationError naming %s", err, pricing.EnvTable)
	}
}
