package triggers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
)

// recordSpans makes a tracer provider recording into memory the global
// one until the test ends; tests calling it must not run in parallel.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })
	return exp
}

const (
	producerTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	producerTS = "congo=t61rcWkgMzE"
	xrayHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	xrayTP     = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
	otherTP    = "00-11111111111111111111111111111111-2222222222222222-01"
)

// traceID is the trace ID field of a traceparent.
func traceID(tp string) string {
	if f := strings.Split(tp, "-"); len(f) == 4 {
		return f[1]
	}
	return ""
}

// Each SQS record's run continues the trace its message carries: the
// traceparent and tracestate message attributes, else the AWSTraceHeader
// system attribute (X-Ray); W3C wins when both are there; a message
// without one starts its own trace. The sortie.trigger span's parent is
// the producer's span, and the run's submission is its child.
func TestSQSRecordsContinueTheirProducersTrace(t *testing.T) {
	exp := recordSpans(t)
	router, r := newRouter(t)
	str := func(v string) map[string]any { return map[string]any{"stringValue": v, "dataType": "String"} }
	ids := []string{"m-1", "m-2", "m-3", "m-4"}
	batch := sqsBatchWith(t, ids, []any{`{"order":"A-1"}`, `{"order":"A-2"}`, `{"order":"A-3"}`, `{"order":"A-4"}`},
		func(i int, rec map[string]any) {
			attrs, sys := map[string]any{}, map[string]any{"SentTimestamp": "1520621625029"}
			switch ids[i] {
			case "m-1":
				attrs["traceparent"], attrs["tracestate"] = str(producerTP), str(producerTS)
			case "m-2":
				sys["AWSTraceHeader"] = xrayHeader
			case "m-4":
				attrs["traceparent"], sys["AWSTraceHeader"] = str(otherTP), xrayHeader
			}
			rec["messageAttributes"], rec["attributes"] = attrs, sys
		})
	if _, err := router.HandleLambda(context.Background(), batch); err != nil {
		t.Fatalf("HandleLambda = %v", err)
	}
	want := map[string]string{"m-1": producerTP, "m-2": xrayTP, "m-4": otherTP}
	runs := map[string]*sortie.Run{}
	for _, run := range r.Runs(t) {
		runs[strings.TrimPrefix(run.IdempotencyKey, "trigger/sqs-orders/sqs:")] = run
	}
	for _, id := range ids {
		run := runs[id]
		if run == nil {
			t.Fatalf("no run of %s; runs %v", id, runs)
		}
		got := traceID(run.TraceParent)
		if tp, ok := want[id]; ok && got != traceID(tp) || !ok && (got == "" || got == traceID(producerTP) || got == traceID(xrayTP)) {
			t.Errorf("run of %s: traceparent %q, want trace of %q (a new one when empty)", id, run.TraceParent, tp)
		}
	}
	if runs["m-1"].TraceState != producerTS {
		t.Errorf("run of m-1: tracestate %q, want the message's %q", runs["m-1"].TraceState, producerTS)
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "sortie.trigger" && s.SpanContext.TraceID().String() == traceID(producerTP) {
			if p := s.Parent.SpanID().String(); p != "b7ad6b7169203331" || !s.Parent.IsRemote() {
				t.Errorf("sortie.trigger span of m-1: parent %s (remote %v), want the producer's b7ad6b7169203331", p, s.Parent.IsRemote())
			}
			return
		}
	}
	t.Errorf("no sortie.trigger span in the trace of m-1")
}

// An SNS notification continues the trace of its traceparent and
// tracestate message attributes; a CloudEvent that of its extensions.
func TestSNSAndCloudEventsContinueTheirProducersTrace(t *testing.T) {
	router, r := newRouter(t)
	var sns map[string]any
	if err := json.Unmarshal(readSample(t, "aws/sns-event.json"), &sns); err != nil {
		t.Fatal(err)
	}
	rec := sns["Records"].([]any)[0].(map[string]any)["Sns"].(map[string]any)
	rec["MessageAttributes"] = map[string]any{"traceparent": map[string]any{"Type": "String", "Value": producerTP},
		"tracestate": map[string]any{"Type": "String", "Value": producerTS}}
	raw, _ := json.Marshal(sns)
	if _, err := router.HandleLambda(context.Background(), raw); err != nil {
		t.Fatalf("HandleLambda(SNS) = %v", err)
	}
	ce := triggers.CloudEvent{ID: "n-1", Source: "/notes", Type: "com.example.note", SpecVersion: "1.0", Data: []byte(`"hi"`),
		Extensions: map[string]any{"traceparent": otherTP, "tracestate": producerTS}}
	if _, err := router.RouteCloudEvent(context.Background(), ce); err != nil {
		t.Fatalf("RouteCloudEvent = %v", err)
	}
	got := map[string]string{}
	for _, run := range r.Runs(t) {
		got[run.Labels["trigger.kind"]] = traceID(run.TraceParent) + " " + run.TraceState
	}
	want := map[string]string{"sns": traceID(producerTP) + " " + producerTS, "cloudevents": traceID(otherTP) + " " + producerTS}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s run: trace and tracestate %q, want %q", k, got[k], w)
		}
	}
}

func TestXRayTraceParent(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{xrayHeader, xrayTP},
		{"Sampled=0;Parent=53995C3F42CD8AD8;Root=1-5759E988-BD862E3FE1BE46A994272793;Lineage=a87bd80c:1", "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00"},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", ""},               // no parent
		{"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8", ""}, // unknown version
		{"Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8", ""}, // not hex
		{"Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8", ""}, // zero trace ID
		{"", ""},
	} {
		if got := triggers.XRayTraceParent(tc.header); got != tc.want {
			t.Errorf("XRayTraceParent(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

// A Lambda invocation's X-Ray header becomes the parent only when it is
// sampled and the context has no span.
func TestContextWithXRay(t *testing.T) {
	for _, tc := range []struct {
		ctx    context.Context
		header string
		want   string
	}{
		{context.Background(), xrayHeader, xrayTP},
		{context.Background(), strings.Replace(xrayHeader, "Sampled=1", "Sampled=0", 1), ""},
		{sortie.ContextWithTrace(context.Background(), otherTP, ""), xrayHeader, otherTP},
	} {
		if got, _ := sortie.TraceContextOf(triggers.ContextWithXRay(tc.ctx, tc.header)); got != tc.want {
			t.Errorf("ContextWithXRay(%q) has traceparent %q, want %q", tc.header, got, tc.want)
		}
	}
}
