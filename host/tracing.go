package host

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otelVars are the OpenTelemetry variables a worker subprocess inherits,
// so its attempt spans reach the same collector.
var otelVars = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_SCHEDULE_DELAY",
}

// tracingEnabled reports whether an OTLP traces endpoint is configured
// and the SDK is not disabled (the OpenTelemetry SDK environment spec).
func tracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// StartTracing sets up tracing for this process: W3C Trace Context as the
// global propagator and, when an OTLP traces endpoint is configured and
// the SDK is not disabled (the standard OTEL_EXPORTER_OTLP_* and
// OTEL_SDK_DISABLED variables), an OTLP/HTTP exporter as the global
// tracer provider, named by OTEL_SERVICE_NAME (default "sortie"). The
// returned function flushes and stops it (at most 5 s). A host's server
// continues each request's traceparent, its engine traces submit and
// launch, and its worker subprocesses inherit the OTEL_* variables.
func StartTracing(ctx context.Context) (func(), error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !tracingEnabled() {
		return func() {}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithAttributes(attribute.String("service.name", serviceName())))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}, nil
}

func serviceName() string {
	if v := os.Getenv("OTEL_SERVICE_NAME"); v != "" {
		return v
	}
	return "sortie"
}

// otelEnv are this process's OpenTelemetry variables, for workers.
func otelEnv() []string {
	var out []string
	for _, k := range otelVars {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}
