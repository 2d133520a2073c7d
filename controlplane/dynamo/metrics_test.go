package dynamo_test

import (
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie/internal/metrictest"
)

// reader reads the package's metrics: the global meter provider's
// instruments are bound to the first provider set, so every test shares
// this one and compares counts before and after.
var reader = sync.OnceValue(func() *sdkmetric.ManualReader {
	r := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)))
	return r
})

// metricCounts reads the control plane's counters by "<name> <cause>"
// ("<name> " without a cause).
func metricCounts(t *testing.T) map[string]int64 {
	return metrictest.Sums(t, reader(), "cause")
}

// metricsSince returns what the counters added since they read before
// (metricCounts).
func metricsSince(t *testing.T, before map[string]int64) map[string]int64 {
	out := metricCounts(t)
	for k, v := range before {
		out[k] -= v
	}
	return out
}
