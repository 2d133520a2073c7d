// Package metrictest reads the OpenTelemetry counters of a test's meter
// provider.
package metrictest

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// T is the part of testing.TB Sums uses.
type T interface {
	Fatal(args ...any)
}

// Sums collects r and returns the value of every int64 sum (counter) by
// "<name> <value of its attribute attr>" ("<name> " when a data point has
// no such attribute); it fails t when r cannot be collected.
func Sums(t T, r sdkmetric.Reader, attr attribute.Key) map[string]int64 {
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value(attr)
				out[m.Name+" "+v.AsString()] += dp.Value
			}
		}
	}
	return out
}
