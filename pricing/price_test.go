package pricing_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

func attempt(n int, provider string, detail map[string]string, u *sortie.Usage) sortie.Attempt {
	a := sortie.Attempt{Number: n, LaunchID: "l", Usage: u}
	if provider != "" {
		a.Ref = &sortie.Ref{Provider: provider, ID: "x", Detail: detail}
	}
	return a
}

// Every figure below is worked by hand from the default table (read
// 2026-12-02): item = quantity × USD / per, in nano-dollars, rounded half up.
func TestAttemptCostByLauncher(t *testing.T) {
	table := pricing.Default()
	for _, tc := range []struct {
		name string
		a    sortie.Attempt
		want map[string]sortie.NanoUSD // by price key
	}{{
		// 128 MB × 100 ms = 0.0125 GB-s × $0.0000133334 = 166.6675 n$ → 167;
		// 1 request × $0.20/10⁶ = 200; 8 WRU × $0.625/10⁶ = 5000;
		// 3.5 RRU × $0.125/10⁶ = 437.5 → 438; 1 KMS × $0.03/10⁴ = 3000.
		name: "lambda arm64 on DynamoDB",
		a: attempt(1, "lambda", nil, &sortie.Usage{BilledDurationMs: 100, MemoryMB: 128, Arch: "arm64", Requests: 1,
			WriteUnits: 8, ReadUnits: 3.5, KMSRequests: 1}),
		want: map[string]sortie.NanoUSD{"lambda.arm64.gb_second": 167, "lambda.request": 200,
			"dynamodb.write_request_unit": 5000, "dynamodb.read_request_unit": 438, "kms.aws.request": 3000},
	}, {
		// 1024 MB × 1000 ms = 1 GB-s × $0.0000166667 = 16666.7 → 16667; a
		// launched attempt is one request even when none was recorded.
		name: "lambda x86_64",
		a:    attempt(1, "lambda", nil, &sortie.Usage{BilledDurationMs: 1000, MemoryMB: 1024, Arch: "x86_64"}),
		want: map[string]sortie.NanoUSD{"lambda.x86_64.gb_second": 16667, "lambda.request": 200},
	}, {
		// 1 vCPU × 1 s × $0.000018 = 18000; 0.5 GiB × 1 s × $0.000002 =
		// 1000; no request fee; 1 Cloud KMS operation × $0.03/10⁴ = 3000.
		name: "cloud run job",
		a: attempt(1, "cloudrun", map[string]string{"mode": "job"}, &sortie.Usage{BilledDurationMs: 1000, MemoryMB: 512, VCPU: 1,
			KMSRequests: 1}),
		want: map[string]sortie.NanoUSD{"cloudrun.job.vcpu_second": 18000, "cloudrun.job.gib_second": 1000, "kms.gcp.request": 3000},
	}, {
		// 2 vCPU × 0.3 s × $0.000024 = 14400; 1 GiB × 0.3 s × $0.0000025 =
		// 750; 1 request × $0.40/10⁶ = 400.
		name: "cloud run service, request-based",
		a: attempt(1, "cloudrun", map[string]string{"mode": "service"}, &sortie.Usage{BilledDurationMs: 300, MemoryMB: 1024, VCPU: 2,
			Billing: "request", Requests: 1}),
		want: map[string]sortie.NanoUSD{"cloudrun.request.vcpu_second": 14400, "cloudrun.request.gib_second": 750, "cloudrun.request.request": 400},
	}, {
		// a service with no billing word is instance-based: 1 vCPU × 0.2 s
		// × $0.000018 = 3600; 0.5 GiB × 0.2 s × $0.000002 = 200.
		name: "cloud run service, instance-based",
		a:    attempt(1, "cloudrun", map[string]string{"mode": "service"}, &sortie.Usage{BilledDurationMs: 200, MemoryMB: 512, VCPU: 1}),
		want: map[string]sortie.NanoUSD{"cloudrun.instance.vcpu_second": 3600, "cloudrun.instance.gib_second": 200},
	}, {
		// payloads by reference: 1 PUT × $0.005/10³ = 5000; 2 GETs ×
		// $0.0004/10³ = 800 (S3); 1 write × $0.005/10³ = 5000 and 1 read
		// × $0.0004/10³ = 400 (Cloud Storage class A and B).
		name: "lambda payloads on S3",
		a:    attempt(1, "lambda", nil, &sortie.Usage{Requests: 1, PayloadWrites: 1, PayloadReads: 2, PayloadStore: "s3"}),
		want: map[string]sortie.NanoUSD{"lambda.request": 200, "s3.put_request": 5000, "s3.get_request": 800},
	}, {
		name: "cloud run job payloads on Cloud Storage",
		a:    attempt(1, "cloudrun", map[string]string{"mode": "job"}, &sortie.Usage{PayloadWrites: 1, PayloadReads: 1, PayloadStore: "gs"}),
		want: map[string]sortie.NanoUSD{"gcs.class_a_operation": 5000, "gcs.class_b_operation": 400},
	}, {
		name: "local payloads in the state directory",
		a:    attempt(1, "local", nil, &sortie.Usage{DurationMs: 1000, PayloadWrites: 1, PayloadReads: 1, PayloadStore: "file"}),
		want: map[string]sortie.NanoUSD{"local.second": 0, "file.put_request": 0, "file.get_request": 0},
	}, {
		name: "local on SQLite",
		a:    attempt(1, "local", nil, &sortie.Usage{DurationMs: 1234, KMSRequests: 2}),
		want: map[string]sortie.NanoUSD{"local.second": 0, "kms.local.request": 0},
	}, {
		// never launched (Start failed): only the engine's share, 1 WRU.
		name: "not launched",
		// The engine's seal is counted before the launch; whose KMS it used
		// is known only from the Ref, so it is not priced until then.
		a:    attempt(1, "", nil, &sortie.Usage{WriteUnits: 1, KMSRequests: 3}),
		want: map[string]sortie.NanoUSD{"dynamodb.write_request_unit": 625},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ac, unpriced := table.Attempt(&tc.a)
			got := map[string]sortie.NanoUSD{}
			var total sortie.NanoUSD
			for _, it := range ac.Items {
				got[it.Price] = it.NanoUSD
				total += it.NanoUSD
			}
			if d := cmp.Diff(tc.want, got); d != "" || len(unpriced) > 0 {
				t.Errorf("Attempt(%+v) items (-want +got):\n%s unpriced %v", tc.a.Usage, d, unpriced)
			}
			if ac.TotalNanoUSD != total {
				t.Errorf("Attempt total %d, want the items' sum %d", ac.TotalNanoUSD, total)
			}
		})
	}
}

// Payload writes and reads are items of their own on every kind of
// store, each with its own count.
func TestPayloadWritesAndReadsApart(t *testing.T) {
	table := pricing.Default()
	for store, keys := range map[string][2]string{
		"s3": {"s3.put_request", "s3.get_request"}, "gs": {"gcs.class_a_operation", "gcs.class_b_operation"},
		"file": {"file.put_request", "file.get_request"},
	} {
		a := attempt(1, "local", nil, &sortie.Usage{PayloadWrites: 2, PayloadReads: 3, PayloadStore: store})
		ac, unpriced := table.Attempt(&a)
		got := map[string]string{}
		for _, it := range ac.Items {
			if it.Component == sortie.ComponentPayload {
				got[it.Price] = it.Quantity
			}
		}
		want := map[string]string{keys[0]: "2", keys[1]: "3"}
		if d := cmp.Diff(want, got); d != "" || len(unpriced) > 0 {
			t.Errorf("%s: payload items (-want +got):\n%s unpriced %v", store, d, unpriced)
		}
	}
}

func TestPriceSumsAttemptsAndComponents(t *testing.T) {
	run := &sortie.Run{Attempts: []sortie.Attempt{
		attempt(1, "lambda", nil, &sortie.Usage{BilledDurationMs: 100, MemoryMB: 128, Arch: "arm64", Requests: 1, WriteUnits: 4}),
		attempt(2, "lambda", nil, &sortie.Usage{BilledDurationMs: 100, MemoryMB: 128, Arch: "arm64", Requests: 1, WriteUnits: 4}),
	}}
	c := pricing.Default().Price(run)
	// per attempt: 167 + 200 + 4 × 625 = 2867
	want := &sortie.Cost{TotalNanoUSD: 5734, PriceVersion: "2026-12-02",
		Components: map[string]sortie.NanoUSD{"compute": 334, "requests": 400, "control_plane": 5000}}
	got := &sortie.Cost{TotalNanoUSD: c.TotalNanoUSD, PriceVersion: c.PriceVersion, Components: c.Components}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Price (-want +got):\n%s", d)
	}
	if len(c.Attempts) != 2 || c.Attempts[1].Items[0].Quantity != "0.0125" || c.Attempts[1].Items[0].Unit != "GB-second" {
		t.Errorf("Price attempts %+v, want two with 0.0125 GB-second of compute first", c.Attempts)
	}
}

func TestPriceNamesUnpricedKeys(t *testing.T) {
	table, err := pricing.Parse([]byte(`{"version":"v1","prices":{"lambda.request":{"usd":"0.20","per":1000000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	run := &sortie.Run{Attempts: []sortie.Attempt{attempt(1, "lambda", nil, &sortie.Usage{BilledDurationMs: 10, MemoryMB: 128, Arch: "arm64"})}}
	c := table.Price(run)
	if c.TotalNanoUSD != 200 || len(c.Unpriced) != 1 || c.Unpriced[0] != "lambda.arm64.gb_second" {
		t.Errorf("Price with a partial table = total %d unpriced %v, want 200 and [lambda.arm64.gb_second]", c.TotalNanoUSD, c.Unpriced)
	}
}
