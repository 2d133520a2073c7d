package functions

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sortie-run/sortie"
)

// TracerName is the OpenTelemetry instrumentation scope of the worker's
// spans: "sortie.attempt" for an executed attempt, with children
// "sortie.claim" and "sortie.finish" around those reporter calls. They go
// to the global tracer provider (otel.SetTracerProvider); without one they
// cost nothing.
const TracerName = "github.com/sortie-run/sortie/functions"

// EnvTraceParent and EnvTraceState are the variables that carry the
// attempt span's W3C traceparent and tracestate into an exec runtime's
// environment (the OpenTelemetry environment-variable carrier's names).
const (
	EnvTraceParent = "TRACEPARENT"
	EnvTraceState  = "TRACESTATE"
)

func tracer() trace.Tracer { return otel.Tracer(TracerName) }

// attemptParent returns the context the attempt span starts under: ctx
// when it already carries a span of the invocation's trace (an in-process
// launch passes its "sortie.launch" span); otherwise ctx with the span of
// inv.TraceParent (and inv.TraceState) as the remote parent, or with no
// span at all when the invocation carries none, so an attempt's trace
// comes from its invocation only, never from a span ctx kept from an
// earlier one.
func attemptParent(ctx context.Context, inv *sortie.Invocation) context.Context {
	local := trace.SpanContextFromContext(ctx)
	remote := trace.SpanContextFromContext(sortie.ContextWithTrace(context.Background(), inv.TraceParent, inv.TraceState))
	if remote.IsValid() && local.IsValid() && local.TraceID() == remote.TraceID() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, remote)
}

// startAttemptSpan starts the "sortie.attempt" span of inv.
func startAttemptSpan(ctx context.Context, inv *sortie.Invocation) (context.Context, trace.Span) {
	return tracer().Start(attemptParent(ctx, inv), "sortie.attempt", trace.WithAttributes(
		attribute.String("sortie.run_id", inv.RunID.String()),
		attribute.Int("sortie.attempt", inv.Attempt),
		attribute.String("sortie.launch_id", inv.LaunchID),
		attribute.String("sortie.agent", inv.Agent.Name),
		attribute.String("sortie.runtime", inv.Agent.Runtime)))
}

// endAttemptSpan records the attempt's outcome on span and ends it: the
// outcome's kind, and for an error its type and whether it is retryable
// (never its message, which may quote what the handler saw); err is the
// error Execute returns (a refused claim, a failed finish).
func endAttemptSpan(span trace.Span, o sortie.Outcome, err error) {
	defer span.End()
	switch {
	case err != nil:
		failSpan(span, err)
		return
	case o.Error != nil:
		span.SetAttributes(attribute.String("sortie.outcome", "error"),
			attribute.String("sortie.error_type", o.Error.Type), attribute.Bool("sortie.retryable", o.Error.Retryable))
		span.SetStatus(codes.Error, "error type "+o.Error.Type)
		return
	case o.Interrupt != nil:
		span.SetAttributes(attribute.String("sortie.outcome", "interrupt"),
			attribute.String("sortie.interrupt_state", string(o.Interrupt.State)))
	default:
		span.SetAttributes(attribute.String("sortie.outcome", "result"))
	}
	span.SetStatus(codes.Ok, "")
}

// failSpan records err, a reporter's or the worker's own error (never a
// handler's), on span.
func failSpan(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// claim claims the attempt, when traced under a "sortie.claim" span.
// A refused claim is counted ([MetricClaimsRefused]).
func claim(ctx context.Context, rep Reporter, traced bool) error {
	if !traced {
		err := rep.Claim(ctx)
		if err != nil {
			countRefusedClaim(ctx, err)
		}
		return err
	}
	ctx, span := tracer().Start(ctx, "sortie.claim")
	defer span.End()
	err := rep.Claim(ctx)
	if err != nil {
		countRefusedClaim(ctx, err)
		failSpan(span, err)
	}
	return err
}

// finish reports the attempt's outcome under a "sortie.finish" span, which
// the reporter's context carries.
func (a *attempt) finish(ctx context.Context, o sortie.Outcome) error {
	if a.session {
		return a.out.finish(context.WithoutCancel(ctx), o)
	}
	ctx, span := tracer().Start(ctx, "sortie.finish")
	defer span.End()
	err := a.out.finish(context.WithoutCancel(ctx), o)
	if err != nil {
		failSpan(span, err)
	}
	return err
}

// injectTrace sets the traceparent and tracestate headers of ctx's span
// on h (W3C Trace Context over HTTP), so the callback host's spans join
// the attempt's trace.
func injectTrace(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}

// tracedExecRunner is execRunner with TRACEPARENT and TRACESTATE (the
// attempt span's, when there is one) added to the command's environment;
// they replace those of spec.Env. Nothing else of the host's environment
// is added.
func tracedExecRunner(id string, spec ExecSpec) runner {
	return func(ctx context.Context, c *Call, margin time.Duration) sortie.Outcome {
		run := spec
		if tp, ts := sortie.TraceContextOf(ctx); tp != "" {
			run.Env = append(slices.DeleteFunc(slices.Clone(spec.Env), func(kv string) bool {
				return strings.HasPrefix(kv, EnvTraceParent+"=") || strings.HasPrefix(kv, EnvTraceState+"=")
			}), EnvTraceParent+"="+tp)
			if ts != "" {
				run.Env = append(run.Env, EnvTraceState+"="+ts)
			}
		}
		return execRunner(id, run)(ctx, c, margin)
	}
}
