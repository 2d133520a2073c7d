package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
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
// (protobuf) span exporter (batching) as the global tracer provider, its resource named by
// OTEL_SERVICE_NAME (default "sortie") and OTEL_RESOURCE_ATTRIBUTES. It
// fails only when the exporter or the resource cannot be made from the
// environment. The caller calls Shutdown before the process exits.
func StartTracing(ctx context.Context) (*Tracing, error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !Enabled("TRACES") {
		return &Tracing{}, nil
	}
	exp, err := newExporter()
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
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

// newResource is the resource of this process's telemetry.
func newResource(ctx context.Context) (*resource.Resource, error) {
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "sortie"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithAttributes(attribute.String("service.name", name)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}
