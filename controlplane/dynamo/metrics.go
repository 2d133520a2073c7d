package dynamo

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie/internal/instrument"
)

// The control plane's metrics, the process-wide counterparts of
// [Consumed]'s Retries, Throttles, TransactionConflicts and
// ConsistentReads. They go to the global meter provider (host.StartMetrics
// in `sortie serve`); without one they cost nothing.
const (
	// MetricRetries counts DynamoDB calls sent again after a transient
	// failure, beyond the SDK's own retries, by attribute "cause":
	// "throttled" (ProvisionedThroughputExceeded, RequestLimitExceeded,
	// ThrottlingException), "transaction_conflict" or "other" (a 5xx
	// answer, a network failure).
	MetricRetries = "sortie.dynamodb.retries"
	// MetricFallbackReads counts the strongly consistent GetItem calls
	// made because a lost condition came back without the item that won.
	MetricFallbackReads = "sortie.dynamodb.fallback_reads"
)

// MeterName is the instrumentation scope of the control plane's metrics.
const MeterName = "github.com/sortie-run/sortie/controlplane/dynamo"

var (
	retryCount    = mustCounter(MetricRetries, "{call}", "DynamoDB calls sent again after a transient failure, by cause")
	fallbackCount = mustCounter(MetricFallbackReads, "{read}", "Strongly consistent reads made for a lost condition without its item")

	causeThrottled = metric.WithAttributes(attribute.String("cause", "throttled"))
	causeConflict  = metric.WithAttributes(attribute.String("cause", "transaction_conflict"))
	causeOther     = metric.WithAttributes(attribute.String("cause", "other"))
)

// mustCounter makes one of the package's counters.
func mustCounter(name, unit, desc string) metric.Int64Counter {
	return instrument.Counter(MeterName, name, unit, desc)
}

// countRetry adds one retry of the cause that err is.
func countRetry(err error) {
	opt := causeOther
	switch {
	case throttled(err):
		opt = causeThrottled
	case transactionConflict(err):
		opt = causeConflict
	}
	retryCount.Add(context.Background(), 1, opt)
}
