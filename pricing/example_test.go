package pricing_test

import (
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// A ten-event run on Lambda arm64 (128 MB, 100 ms) with its DynamoDB
// capacity and one KMS request, priced with the default table.
func Example() {
	run := &sortie.Run{Attempts: []sortie.Attempt{{
		Number: 1,
		Ref:    &sortie.Ref{Provider: "lambda"},
		Usage: &sortie.Usage{BilledDurationMs: 100, MemoryMB: 128, Arch: "arm64", Requests: 1,
			WriteUnits: 8, ReadUnits: 3.5, KMSRequests: 1},
	}}}
	c := pricing.Default().Price(run)
	fmt.Println(c.PriceVersion, c.TotalNanoUSD)
	for _, it := range c.Attempts[0].Items {
		fmt.Println(it.Component, it.Price, it.Quantity, it.Unit, it.NanoUSD)
	}
	// Output:
	// 2026-12-02 $0.000008805
	// compute lambda.arm64.gb_second 0.0125 GB-second $0.000000167
	// requests lambda.request 1 request $0.0000002
	// control_plane dynamodb.write_request_unit 8 write request unit $0.000005
	// control_plane dynamodb.read_request_unit 3.5 read request unit $0.000000438
	// kms kms.aws.request 1 request $0.000003
}
