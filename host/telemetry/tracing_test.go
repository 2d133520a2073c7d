package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/sortie-run/sortie/internal/testwait"
)

// With an endpoint set, StartTracing exports over OTLP/HTTP, and Flush
// hands over every ended span before it returns, whatever the batch
// delay; Shutdown restores nothing but stops exporting.
func TestStartTracingFlushes(t *testing.T) {
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
	t.Setenv("OTEL_SERVICE_NAME", "sortie-lambda-test")
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	tr, err := StartTracing(context.Background())
	if err != nil {
		t.Fatalf("StartTracing = %v", err)
	}
	defer tr.Shutdown()
	_, span := otel.Tracer("test").Start(context.Background(), "sortie.attempt")
	span.End()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) != 1 {
		t.Fatalf("requests after Flush = %d, want 1", len(r.reqs))
	}
	rs := r.reqs[0].ResourceSpans[0]
	var service string
	for _, kv := range rs.Resource.Attributes {
		if kv.Key == "service.name" {
			service = kv.Value.GetStringValue()
		}
	}
	if name := rs.ScopeSpans[0].Spans[0].Name; name != "sortie.attempt" || service != "sortie-lambda-test" {
		t.Errorf("exported span %q of service %q, want sortie.attempt of sortie-lambda-test", name, service)
	}
}

// Without an endpoint, or with the SDK disabled, tracing is off: Flush
// and Shutdown do nothing.
func TestStartTracingOff(t *testing.T) {
	for _, env := range [][2]string{{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}, {"OTEL_SDK_DISABLED", "true"}} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv(env[0], env[1])
		tr, err := StartTracing(context.Background())
		if err != nil || tr.tp != nil || tr.Flush(context.Background()) != nil {
			t.Errorf("StartTracing(%s=%q) = %+v, %v; want tracing off", env[0], env[1], tr, err)
		}
		tr.Shutdown()
	}
}

// StartLambdaTracing keeps spans until Flush, however long that takes,
// and exports on its own once 512 have ended.
func TestStartLambdaTracingExportsOnFlush(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "") // StartLambdaTracing sets the default; restored after
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.srv.URL)
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	tr, err := StartLambdaTracing(context.Background())
	if err != nil {
		t.Fatalf("StartLambdaTracing = %v", err)
	}
	defer tr.Shutdown()
	count := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, req := range r.reqs {
			n += len(req.ResourceSpans[0].ScopeSpans[0].Spans)
		}
		return n
	}
	for range 3 {
		_, span := otel.Tracer("test").Start(context.Background(), "sortie.claim")
		span.End()
	}
	if n := count(); n != 0 {
		t.Errorf("spans exported before Flush = %d, want 0", n)
	}
	if err := tr.Flush(context.Background()); err != nil || count() != 3 {
		t.Fatalf("Flush = %v, then %d spans exported; want 3", err, count())
	}
	for range bufferSize {
		_, span := otel.Tracer("test").Start(context.Background(), "sortie.event")
		span.End()
	}
	testwait.Until(t, "a full buffer exported without a flush", 10*time.Second, func() bool { return count() == 3+bufferSize })
}
