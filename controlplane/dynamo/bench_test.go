package dynamo_test

import (
	"fmt"
	"testing"
)

// BenchmarkRunCost takes runs through Reserve, RecordLaunch, SetRef, Claim,
// 10 events and Finish on DynamoDB Local, and reports per run the write
// units (table and indexes; DynamoDB Local bills them as DynamoDB does),
// the index part of them, the read units and the requests, as DynamoDB
// reported them with ReturnConsumedCapacity. Variants: with and without an
// idempotency key; the 10 events in one AppendEvents call or one call each
// (as the worker runtime sends them today).
func BenchmarkRunCost(b *testing.B) {
	for _, keyedRun := range []bool{true, false} {
		for _, single := range []bool{false, true} {
			name := fmt.Sprintf("key=%v/appends=%d", keyedRun, map[bool]int{false: 1, true: 10}[single])
			b.Run(name, func(b *testing.B) {
				db, table := newTable(b)
				cp := open(b, db, table, nil)
				ctx := b.Context()
				i := int64(0)
				for b.Loop() {
					i++
					if _, err := lifecycle(ctx, cp, T0+i, 10, keyedRun, single); err != nil {
						b.Fatal(err)
					}
				}
				c, n := cp.Consumed(), float64(i)
				b.ReportMetric(c.WriteUnits/n, "WRU/run")
				b.ReportMetric(c.IndexWriteUnits/n, "indexWRU/run")
				b.ReportMetric(c.ReadUnits/n, "RRU/run")
				b.ReportMetric(float64(c.Requests)/n, "requests/run")
			})
		}
	}
}
