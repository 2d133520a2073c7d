package triggers

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sortie-run/sortie"
)

// TracerName is the OpenTelemetry instrumentation scope of the router's
// spans: "sortie.trigger" (kind consumer) for each event routed, under
// the trace context the event carries (see [Event.TraceParent]) or ctx's
// span, with the engine's "sortie.submit" spans of its runs as children.
// They go to the global tracer provider; without one they cost nothing.
const TracerName = "github.com/sortie-run/sortie/functions/triggers"

// The names a producer's trace context goes by: W3C Trace Context's in
// SQS and SNS message attributes and CloudEvents extensions (the
// CloudEvents Distributed Tracing extension), and the SQS system
// attribute carrying an X-Ray trace header.
const (
	attrTraceParent    = "traceparent"
	attrTraceState     = "tracestate"
	attrAWSTraceHeader = "AWSTraceHeader"
)

// startTriggerSpan starts the "sortie.trigger" span of ev: under ev's
// trace context when it carries one (unless ctx's span is already of that
// trace: an envelope's span for its records), else under ctx's span.
func startTriggerSpan(ctx context.Context, ev *Event) (context.Context, trace.Span) {
	remote := trace.SpanContextFromContext(sortie.ContextWithTrace(context.Background(), ev.TraceParent, ev.TraceState))
	if local := trace.SpanContextFromContext(ctx); remote.IsValid() && local.TraceID() != remote.TraceID() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
	}
	return otel.Tracer(TracerName).Start(ctx, "sortie.trigger", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("sortie.trigger.kind", string(ev.Kind)),
			attribute.String("sortie.trigger.event_id", ev.ID), attribute.String("sortie.trigger.source", ev.Source)))
}

// endTriggerSpan records the failures of routing (err, joined) and ends span.
func endTriggerSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// sqsTrace returns the trace context of an SQS message: its traceparent
// and tracestate message attributes (strings), else the X-Ray trace
// header SQS keeps in its AWSTraceHeader system attribute.
func sqsTrace(m *events.SQSMessage) (traceparent, tracestate string) {
	str := func(name string) string {
		if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
			return *a.StringValue
		}
		return ""
	}
	if tp := str(attrTraceParent); tp != "" {
		return tp, str(attrTraceState)
	}
	return XRayTraceParent(m.Attributes[attrAWSTraceHeader]), ""
}

// snsTrace returns the traceparent and tracestate message attributes of
// an SNS notification (MessageAttributes as SNS writes them into a Lambda
// event or an SQS body: {"Type": "String", "Value": "..."}).
func snsTrace(attrs map[string]any) (traceparent, tracestate string) {
	str := func(name string) string {
		a, _ := attrs[name].(map[string]any)
		v, _ := a["Value"].(string)
		return v
	}
	return str(attrTraceParent), str(attrTraceState)
}

// ceTrace returns the traceparent and tracestate extensions of a CloudEvent.
func ceTrace(ext map[string]any) (traceparent, tracestate string) {
	tp, _ := ext[attrTraceParent].(string)
	ts, _ := ext[attrTraceState].(string)
	return tp, ts
}

// XRayTraceParent returns the W3C traceparent of an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
// fields in any order, others ignored): the root's 8 + 24 hex digits as the
// trace ID, Parent as the parent span ID, sampled when Sampled=1. It
// returns "" for a header without a well-formed Root and Parent.
func XRayTraceParent(header string) string {
	var root, parent, flags = "", "", "00"
	for _, f := range strings.Split(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			if v == "1" {
				flags = "01"
			}
		}
	}
	ver, rest, _ := strings.Cut(root, "-")
	epoch, unique, _ := strings.Cut(rest, "-")
	if ver != "1" || len(epoch) != 8 {
		return ""
	}
	// The W3C propagator checks the rest: 32 and 16 hex digits, not all zero.
	tp := "00-" + strings.ToLower(epoch+unique) + "-" + strings.ToLower(parent) + "-" + flags
	if !trace.SpanContextFromContext(sortie.ContextWithTrace(context.Background(), tp, "")).IsValid() {
		return ""
	}
	return tp
}

// ContextWithXRay returns ctx with the remote parent of an X-Ray trace
// header (a Lambda invocation's, as aws-lambda-go puts it in the context
// under "x-amzn-trace-id") when ctx has no span yet and the header is
// sampled (Sampled=1): how EventBridge, S3 and SNS hand a producer's X-Ray
// trace to a function they invoke. An unsampled header (Lambda writes one
// for every invocation) changes nothing, so it cannot turn tracing off.
func ContextWithXRay(ctx context.Context, header string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	tp := XRayTraceParent(header)
	if !strings.HasSuffix(tp, "-01") {
		return ctx
	}
	return sortie.ContextWithTrace(ctx, tp, "")
}
