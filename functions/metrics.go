package functions

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/instrument"
)

// MetricClaimsRefused counts claims the control plane refused, so the
// worker executed nothing, by the attribute reason: "stale" (a duplicate
// delivery, a launch superseded by a newer one, an attempt already
// claimed or ended: ErrConflict), "cancelled" (ErrCancelRequested),
// "terminal" (ErrTerminal) or "error" (the claim itself failed). It goes
// to the global meter provider (a host's, for the warm and in-process
// workers it runs); without one it costs nothing.
const MetricClaimsRefused = "sortie.claims.refused"

// MeterName is the instrumentation scope of the worker's metrics.
const MeterName = "github.com/sortie-run/sortie/functions"

var claimsRefused = instrument.Counter(MeterName, MetricClaimsRefused, "{claim}", "Claims refused by the control plane: the worker executed nothing")

// countRefusedClaim counts a failed claim by its reason.
func countRefusedClaim(ctx context.Context, err error) {
	reason := "error"
	switch {
	case errors.Is(err, sortie.ErrCancelRequested):
		reason = "cancelled"
	case errors.Is(err, sortie.ErrTerminal):
		reason = "terminal"
	case errors.Is(err, sortie.ErrConflict):
		reason = "stale"
	}
	claimsRefused.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("reason", reason)))
}
