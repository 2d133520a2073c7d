package sortie

import (
	"context"
	"strings"

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

// traceContext is the W3C Trace Context propagator (traceparent and
// tracestate, no baggage), whatever the global propagator is.
var traceContext = propagation.TraceContext{}

// Limits of the trace context a run and an invocation carry: a W3C
// traceparent (55 bytes in version 00; later versions may append
// fields) and a tracestate (W3C Trace Context: vendors propagate at
// least 512 characters and may drop the rest).
const (
	MaxTraceParentBytes = 256
	MaxTraceStateBytes  = 512
)

// TraceContextOf returns the W3C traceparent and tracestate of ctx's
// span; both empty when ctx carries no valid span, tracestate empty when
// the span has none.
// A tracestate over [MaxTraceStateBytes] loses list members from its end
// until it fits, as W3C Trace Context lets a vendor truncate it.
func TraceContextOf(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent"), clipTraceState(c.Get("tracestate"))
}

// clipTraceState drops list members from the end of ts until it is at
// most MaxTraceStateBytes.
func clipTraceState(ts string) string {
	for len(ts) > MaxTraceStateBytes {
		i := strings.LastIndexByte(ts, ',')
		if i < 0 {
			return ""
		}
		ts = ts[:i]
	}
	return ts
}

// ContextWithTrace returns ctx carrying the remote span context of a
// W3C traceparent and its tracestate (as in [Invocation.TraceParent] and
// [Invocation.TraceState]); ctx unchanged when traceparent is empty or
// malformed. A malformed tracestate is dropped, keeping the traceparent.
func ContextWithTrace(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return traceContext.Extract(ctx, c)
}

// startSpan starts a span under ctx's span, or under the remote parent
// of traceparent and tracestate when traceparent is set.
func startSpan(ctx context.Context, name, traceparent, tracestate string) (context.Context, trace.Span) {
	ctx = ContextWithTrace(ctx, traceparent, tracestate)
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
