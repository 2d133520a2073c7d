package triggers

import (
	"os"
	"testing"
)

// BenchmarkParseAWS measures reading deliveries into records, envelopes
// unwrapped, without routing: an S3 notification, an SNS message carrying
// two S3 records, and an SQS batch of four envelopes.
func BenchmarkParseAWS(b *testing.B) {
	for _, name := range []string{"aws/s3-event.json", "envelopes/sns-s3.json", "envelopes/sqs-fanout.json"} {
		raw, err := os.ReadFile("testdata/" + name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, recs, err := ParseAWS(raw); err != nil || len(recs) == 0 {
					b.Fatalf("ParseAWS(%s) = %d records, %v", name, len(recs), err)
				}
			}
		})
	}
}
