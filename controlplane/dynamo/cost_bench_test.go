package dynamo_test

import (
	"fmt"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/pricing"
)

// The published prices the comparison uses (read 2026-12-02), in
// nano-dollars per unit:
//
//   - AWS Step Functions Pricing (aws.amazon.com/step-functions/pricing):
//     Standard workflows $25 per million state transitions.
//   - AWS Lambda Pricing, durable functions (aws.amazon.com/lambda/pricing):
//     $8.00 per million durable operations (steps, waits, callbacks),
//     $0.25 per GB of data written (as "$0.25 per million 1 KB writes").
//   - Temporal Cloud pricing (docs.temporal.io/cloud/pricing): actions
//     from $50 per million (pay-as-you-go, before volume discounts).
const (
	sfnTransitionNano  = 25_000 // $25 / 10⁶
	durableOpNano      = 8_000  // $8 / 10⁶
	durableWrite1KNano = 250    // $0.25 / 10⁶ KB
	temporalActionNano = 50_000 // $50 / 10⁶
	workMs             = 100    // the unit of work: 100 ms
	lambdaMB           = 128    // Lambda arm64, 128 MB
	stepMs             = workMs / 10
)

// priced prices one attempt of usage u on ref with the default table.
func priced(ref *sortie.Ref, u *sortie.Usage) sortie.NanoUSD {
	ac, _ := pricing.Default().Attempt(&sortie.Attempt{Number: 1, Ref: ref, Usage: u})
	return ac.TotalNanoUSD
}

// lambdaWork is the same work on Lambda arm64 128 MB: invocations
// invocations sharing workMs of compute.
func lambdaWork(invocations int64) sortie.NanoUSD {
	return priced(&sortie.Ref{Provider: "lambda"}, &sortie.Usage{BilledDurationMs: workMs, MemoryMB: lambdaMB, Arch: "arm64", Requests: invocations})
}

// BenchmarkCostPer1000Runs measures what Sortie's control plane consumes
// for runs with 0 and 10 events (DynamoDB Local's ReturnConsumedCapacity:
// the host's Reserve and SetRef, the worker's Claim, one AppendEvents of
// the events and Finish, and the reconciler's pass over the run's lease
// entry) and prices 1,000 such runs with the default price table, the
// attempt on Lambda (arm64, 128 MB, 100 ms billed, one request) or on
// Cloud Run Jobs (1 vCPU, 512 MiB, 100 ms billed), no inline
// configuration (no KMS request). Beside it, the same work at the
// published prices of Step Functions Standard (one Task state, a Lambda,
// per step: 1 transition for a no-op run, 10 for ten steps), Lambda
// durable functions (one invocation; one durable operation and one 1 KB
// checkpoint per step) and Temporal Cloud (workflow start plus one action
// per activity), each with the same Lambda compute. Metrics are dollars
// per 1,000 runs.
func BenchmarkCostPer1000Runs(b *testing.B) {
	for _, events := range []int{0, 10} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			db, table := newTable(b)
			host, worker, reconciler := open(b, db, table, nil), open(b, newClient(), table, nil), open(b, newClient(), table, nil)
			m := &opMeter{}
			n := int64(0)
			for b.Loop() {
				n++
				if err := hostWorkerRun(b.Context(), m, host, worker, T0+n, events, 1); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := reconciler.Expired(b.Context(), T0+n+dynamo.LeaseMarginMs+3_600_000, 0); err != nil {
				b.Fatal(err)
			}
			var units dynamo.Capacity
			for _, h := range []*dynamo.ControlPlane{host, worker, reconciler} {
				c := h.Consumed()
				units.ReadUnits += c.ReadUnits
				units.WriteUnits += c.WriteUnits
			}
			report(b, events, units.WriteUnits/float64(n), units.ReadUnits/float64(n))
		})
	}
}

// report prices 1,000 runs of each kind and reports them in dollars.
func report(b *testing.B, events int, wru, rru float64) {
	steps := int64(max(events, 1))
	cp := &sortie.Usage{WriteUnits: wru, ReadUnits: rru}
	lambda := priced(&sortie.Ref{Provider: "lambda"}, cp.Plus(&sortie.Usage{BilledDurationMs: workMs, MemoryMB: lambdaMB, Arch: "arm64", Requests: 1}))
	jobs := priced(&sortie.Ref{Provider: "cloudrun", Detail: map[string]string{"mode": "job"}},
		cp.Plus(&sortie.Usage{BilledDurationMs: workMs, MemoryMB: 512, VCPU: 1, Billing: "job"}))
	sfn := sortie.NanoUSD(steps*sfnTransitionNano) + lambdaWork(steps)
	durable := sortie.NanoUSD(steps*(durableOpNano+durableWrite1KNano)) + lambdaWork(1)
	temporal := sortie.NanoUSD((1+steps)*temporalActionNano) + lambdaWork(steps)
	perK := func(n sortie.NanoUSD) float64 { return float64(n) * 1000 / 1e9 }
	b.ReportMetric(wru, "WRU/run")
	b.ReportMetric(rru, "RRU/run")
	b.ReportMetric(perK(lambda), "sortie-lambda-$/1k")
	b.ReportMetric(perK(jobs), "sortie-cloudrunjobs-$/1k")
	b.ReportMetric(perK(sfn), "stepfunctions-$/1k")
	b.ReportMetric(perK(durable), "lambdadurable-$/1k")
	b.ReportMetric(perK(temporal), "temporalcloud-$/1k")
	b.ReportMetric(float64(lambda)/float64(min(sfn, durable)), "sortie/cheapest-peer")
}
