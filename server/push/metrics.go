package push

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/instrument"
)

// MetricDeliveries counts recorded webhook deliveries by the attribute
// outcome: "delivered" (a 2xx), "failed" (retried later) or "ended" (the
// configuration is done without a delivery: 410 Gone, or given up). It
// goes to the global meter provider (host.StartMetrics); without one it
// costs nothing.
const MetricDeliveries = "sortie.push.deliveries"

// MeterName is the instrumentation scope of the dispatcher's metrics.
const MeterName = "github.com/sortie-run/sortie/server/push"

var deliveries = instrument.Counter(MeterName, MetricDeliveries, "{delivery}", "Webhook deliveries recorded, by outcome")

// countDelivery counts the recorded progress p.
func countDelivery(ctx context.Context, p sortie.PushDelivery) {
	outcome := "delivered"
	switch {
	case p.LastError != "" && p.Done:
		outcome = "ended"
	case p.LastError != "":
		outcome = "failed"
	}
	deliveries.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}
