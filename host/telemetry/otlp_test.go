package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// receiver is an OTLP/HTTP traces endpoint on loopback that keeps each
// request's headers and decoded body, answering from statuses (the last
// repeats; 200 when empty).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	reqs     []*coltrace.ExportTraceServiceRequest
	headers  []http.Header
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var m coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("receiver: %s %s (%s): %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reqs, r.headers = append(r.reqs, &m), append(r.headers, req.Header.Clone())
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status = r.statuses[0]
			if len(r.statuses) > 1 {
				r.statuses = r.statuses[1:]
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// makeSpans ends spans of two scopes with every attribute type, events,
// links, statuses, kinds, a remote parent with a tracestate, and returns
// them.
func makeSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	rec := &collect{}
	res := resource.NewSchemaless(attribute.String("service.name", "sortie-test"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec), sdktrace.WithResource(res))
	defer tp.Shutdown(context.Background())
	ts, _ := trace.ParseTraceState("rojo=00f067aa0ba902b7")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2}, SpanID: trace.SpanID{3}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	a := tp.Tracer("scope/a", trace.WithInstrumentationVersion("1.2"), trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	b := tp.Tracer("scope/b", trace.WithInstrumentationAttributes(attribute.Bool("x", true)))
	ctx, s1 := a.Start(ctx, "sortie.trigger", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.Bool("b", true), attribute.Int("i", -7), attribute.Float64("f", 1.5), attribute.String("s", "ü"),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.IntSlice("is", []int{1, 2}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", "b"})),
		trace.WithLinks(trace.Link{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.String("l", "v")}}))
	_, s2 := b.Start(ctx, "sortie.submit", trace.WithSpanKind(trace.SpanKindServer))
	s2.AddEvent("retry", trace.WithAttributes(attribute.Int("try", 2)))
	s2.SetStatus(codes.Error, "throttled")
	s2.End()
	_, s3 := a.Start(ctx, "internal")
	s3.SetStatus(codes.Ok, "")
	s3.End()
	s1.End()
	return rec.spans
}

type collect struct{ spans []sdktrace.ReadOnlySpan }

func (c *collect) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	c.spans = append(c.spans, s...)
	return nil
}
func (c *collect) Shutdown(context.Context) error { return nil }

// The body we post is what the SDK's own OTLP/HTTP exporter posts for
// the same spans.
func TestExporterMatchesTheSDKExporter(t *testing.T) {
	spans := makeSpans(t)
	ours, theirs := newReceiver(t), newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ours.srv.URL)
	exp, err := newExporter()
	if err != nil {
		t.Fatalf("newExporter = %v", err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("ExportSpans = %v", err)
	}
	sdk, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(theirs.srv.URL+"/v1/traces"), otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("SDK ExportSpans = %v", err)
	}
	if len(ours.reqs) != 1 || len(theirs.reqs) != 1 {
		t.Fatalf("requests: ours %d, the SDK's %d; want 1 each", len(ours.reqs), len(theirs.reqs))
	}
	// The SDK's exporter (v1.47) leaves out a link's trace_state, which
	// OTLP's Span.Link has and ours fills.
	link := ours.reqs[0].ResourceSpans[0].ScopeSpans[1].Spans[1].Links[0]
	if link.TraceState != "rojo=00f067aa0ba902b7" {
		t.Errorf("link trace_state = %q, want the linked span's", link.TraceState)
	}
	link.TraceState = ""
	if d := cmp.Diff(theirs.reqs[0], ours.reqs[0], protocmp.Transform()); d != "" {
		t.Errorf("our request (-SDK's +ours):\n%s", d)
	}
	if n := len(ours.reqs[0].ResourceSpans[0].ScopeSpans); n != 2 {
		t.Errorf("scopes = %d, want 2", n)
	}
}

// A 503 is retried; headers come from OTEL_EXPORTER_OTLP_HEADERS; a 400
// is not retried.
func TestExporterRetriesAndHeaders(t *testing.T) {
	spans := makeSpans(t)
	r := newReceiver(t, http.StatusServiceUnavailable, http.StatusOK)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.srv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20x,tenant=t1")
	exp, err := newExporter()
	if err != nil {
		t.Fatalf("newExporter = %v", err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("ExportSpans after a 503 = %v, want the retry to succeed", err)
	}
	if len(r.reqs) != 2 || r.headers[1].Get("api-key") != "s x" || r.headers[1].Get("tenant") != "t1" {
		t.Errorf("requests %d, headers %v; want 2 with api-key 's x' and tenant t1", len(r.reqs), r.headers)
	}
	bad := newReceiver(t, http.StatusBadRequest)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", bad.srv.URL+"/v1/traces")
	exp, _ = newExporter()
	if err := exp.ExportSpans(context.Background(), spans); err == nil || len(bad.reqs) != 1 {
		t.Errorf("ExportSpans answered 400 = %v after %d requests, want an error after 1", err, len(bad.reqs))
	}
}

func TestNewExporterRefusesBadVariables(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "soon"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			t.Setenv(tc.name, tc.value)
			if _, err := newExporter(); err == nil || !errorNames(err, tc.name) {
				t.Errorf("newExporter(%s=%q) = %v, want an error naming it", tc.name, tc.value, err)
			}
		})
	}
}

func errorNames(err error, name string) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if len(err.Error()) >= len(name) && err.Error()[:len(name)] == name {
			return true
		}
	}
	return false
}
