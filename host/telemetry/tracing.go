package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ShutdownTimeout bounds the final flush of [Tracing.Shutdown] and
// [Metrics.Shutdown].
const ShutdownTimeout = 5 * time.Second

// Enabled reports whether an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT, or signal's own variable such as
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT for signal "TRACES") and the SDK is
// not disabled (OTEL_SDK_DISABLED=true).
func Enabled(signal string) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// Tracing is a process's tracer provider; its zero value (tracing off)
// does nothing.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// StartTracing sets W3C Trace Context (traceparent, tracestate) as the
// global propagator and, when [Enabled]("TRACES"), an OTLP/HTTP
// (protobuf) span exporter behind the SDK's batch span processor
// (OTEL_BSP_* variables) as the global tracer provider, its resource
// named by OTEL_SERVICE_NAME (default "sortie") and
// OTEL_RESOURCE_ATTRIBUTES. It fails only when the exporter variables are
// wrong, naming the variable. The caller calls Shutdown before the
// process exits.
func StartTracing(ctx context.Context) (*Tracing, error) {
	return start(func(exp sdktrace.SpanExporter) sdktrace.SpanProcessor { return sdktrace.NewBatchSpanProcessor(exp) })
}

// StartLambdaTracing is [StartTracing] for a Lambda function: spans are
// kept in memory and exported when [Tracing.Flush] is called (before each
// handler returns) or when 512 have ended, with no background timer,
// which a frozen execution environment would stop anyway. It leaves the
// SDK's batch processor out of the bootstrap.
func StartLambdaTracing(ctx context.Context) (*Tracing, error) {
	return start(func(exp sdktrace.SpanExporter) sdktrace.SpanProcessor { return &buffer{exp: exp} })
}

func start(processor func(sdktrace.SpanExporter) sdktrace.SpanProcessor) (*Tracing, error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !Enabled("TRACES") {
		return &Tracing{}, nil
	}
	exp, err := newExporter()
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	DefaultServiceName()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor(exp)))
	otel.SetTracerProvider(tp)
	return &Tracing{tp: tp}, nil
}

// Flush exports every span ended so far, waiting at most until ctx ends;
// nil when tracing is off. A Lambda handler calls it before it returns.
func (t *Tracing) Flush(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter, waiting at most
// [ShutdownTimeout].
func (t *Tracing) Shutdown() {
	if t.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	_ = t.tp.Shutdown(ctx)
}

// DefaultServiceName names the service "sortie" when neither
// OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES does, before the SDK
// reads them into its default resource.
func DefaultServiceName() {
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		_ = os.Setenv("OTEL_SERVICE_NAME", "sortie")
	}
}
