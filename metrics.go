package sortie

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie/internal/instrument"
)

// The engine's metrics. They go to the global meter provider (a host's
// host.StartMetrics: OTLP and the /metrics endpoint of `sortie serve`);
// without one they cost nothing. Attributes: sortie.agent (the agent's
// name) and, on launches, sortie.attempt.retry (true for attempt 2 and
// later: a retry or a resume) and error.type ("launch") when Start failed.
const (
	// MetricRunsSubmitted counts runs created by Submit (a submission
	// answered with an existing run of its idempotency key is not one).
	MetricRunsSubmitted = "sortie.runs.submitted"
	// MetricLaunchDuration is how long the launcher's Start took, in
	// seconds (a histogram): the compute service accepting the attempt,
	// or, for launchers that run the attempt inside Start, the attempt.
	MetricLaunchDuration = "sortie.launch.duration"
	// MetricReconcilerLag is how late the reconciler took up a run that
	// was due (its lease expired, or its retry's backoff ended), in
	// seconds (a histogram), by the attribute sortie.reconcile.kind:
	// "due" (launch the next attempt), "unclaimed" (a launch nobody
	// claimed) or "claimed" (a worker stopped heartbeating).
	MetricReconcilerLag = "sortie.reconciler.lag"
)

// MeterName is the instrumentation scope of the engine's metrics.
const MeterName = "github.com/sortie-run/sortie"

var (
	engineMeter    = otel.Meter(MeterName)
	submittedCount = instrument.Must(engineMeter.Int64Counter(MetricRunsSubmitted,
		metric.WithDescription("Runs created by submissions"), metric.WithUnit("{run}")))
	launchDuration = instrument.Must(engineMeter.Float64Histogram(MetricLaunchDuration,
		metric.WithDescription("Duration of the launcher's Start of an attempt"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(secondsBuckets...)))
	reconcilerLag = instrument.Must(engineMeter.Float64Histogram(MetricReconcilerLag,
		metric.WithDescription("How late the reconciler took up a due run"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(secondsBuckets...)))
)

// secondsBuckets are the histograms' bucket boundaries, in seconds.
var secondsBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// countSubmitted counts a run created by a submission.
func countSubmitted(ctx context.Context, run *Run) {
	submittedCount.Add(ctx, 1, metric.WithAttributes(attribute.String("sortie.agent", run.Agent.Name)))
}

// recordLaunch records the duration of inv's Start since began.
func recordLaunch(ctx context.Context, inv *Invocation, began time.Time, err error) {
	attrs := []attribute.KeyValue{attribute.String("sortie.agent", inv.Agent.Name), attribute.Bool("sortie.attempt.retry", inv.Attempt > 1)}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", "launch"))
	}
	launchDuration.Record(context.WithoutCancel(ctx), time.Since(began).Seconds(), metric.WithAttributes(attrs...))
}

// recordLag records how late the reconciler took up run (due at its
// LeaseExpiresMs) at nowMs.
func recordLag(ctx context.Context, run *Run, kind string, nowMs int64) {
	if run.LeaseExpiresMs == 0 || nowMs < run.LeaseExpiresMs {
		return
	}
	reconcilerLag.Record(context.WithoutCancel(ctx), float64(nowMs-run.LeaseExpiresMs)/1000,
		metric.WithAttributes(attribute.String("sortie.reconcile.kind", kind)))
}
