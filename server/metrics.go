package server

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie/internal/instrument"
)

// The server's metrics, counters of requests refused for a backing
// service's state, by route ("POST /v1/runs"). They go to the global
// meter provider (host/telemetry's StartMetrics); without one they cost
// nothing.
const (
	// MetricThrottled counts answers 429 "throttled": a backing service
	// (DynamoDB, Lambda) throttled the work even after the client's
	// retries.
	MetricThrottled = "sortie.server.throttled"
	// MetricUnavailable counts answers 503 "unavailable": a backing
	// service failed or the server is shutting down.
	MetricUnavailable = "sortie.server.unavailable"
)

// MeterName is the instrumentation scope of the server's metrics.
const MeterName = "github.com/sortie-run/sortie/server"

var (
	throttledCount = mustCounter(MetricThrottled, "Requests answered 429 throttled: a backing service throttled the work")
	unavailCount   = mustCounter(MetricUnavailable, "Requests answered 503 unavailable: a backing service failed or the server is shutting down")
)

// mustCounter makes one of the package's request counters.
func mustCounter(name, desc string) metric.Int64Counter {
	return instrument.Counter(MeterName, name, "{request}", desc)
}

// countRefusal counts a 429 or 503 answer to r.
func countRefusal(r *http.Request, status int) {
	opt := metric.WithAttributes(attribute.String("http.route", r.Pattern))
	if status == http.StatusTooManyRequests {
		throttledCount.Add(r.Context(), 1, opt)
		return
	}
	unavailCount.Add(r.Context(), 1, opt)
}
