package sortie

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the OpenTelemetry instrumentation scope of the engine's
// spans ("sortie.submit", "sortie.launch"). They go to the global tracer
// provider (otel.SetTracerProvider); without one they cost nothing.
const TracerName = "github.com/sortie-run/sortie"

// traceContext is the W3C Trace Context propagator: traceparent only, no
// baggage, whatever the global propagator is.
var traceContext = propagation.TraceContext{}

// traceParent returns the W3C traceparent of ctx's span, or "".
func traceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent")
}

// ContextWithTraceParent returns ctx carrying the remote span context of
// a W3C traceparent (as in [Invocation.TraceParent]); ctx unchanged when tp
// is empty or malformed.
func ContextWithTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// startSpan starts a span under ctx's span, or under parent (a
// traceparent) when set.
func startSpan(ctx context.Context, name, parent string) (context.Context, trace.Span) {
	ctx = ContextWithTraceParent(ctx, parent)
	return otel.Tracer(TracerName).Start(ctx, name)
}

// endSpan records err on span (when not nil) and returns it.
func endSpan(span trace.Span, err error) error {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

func setRunAttrs(span trace.Span, run *Run) {
	span.SetAttributes(attribute.String("sortie.run_id", run.ID.String()),
		attribute.String("sortie.agent", run.Agent.Name))
}

func setInvocationAttrs(span trace.Span, inv *Invocation) {
	span.SetAttributes(attribute.String("sortie.run_id", inv.RunID.String()),
		attribute.Int("sortie.attempt", inv.Attempt),
		attribute.String("sortie.launch_id", inv.LaunchID))
}
