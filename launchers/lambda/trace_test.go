package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/host/telemetry"
	"github.com/sortie-run/sortie/internal/otlptest"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/callback"
)

// traceHost is a host in this process tracing to a collector: an engine
// launching on a Lambda worker under the emulator (exporting to the same
// collector), whose attempts report over callbacks to the host's API, and
// a trigger router submitting to it.
type traceHost struct {
	cp     sortie.ControlPlane
	router *triggers.Router
}

func startTraceHost(t *testing.T, col *otlptest.Collector) *traceHost {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_SERVICE_NAME", "sortie-host")
	prev, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	tracing, err := telemetry.StartTracing(context.Background())
	if err != nil {
		t.Fatalf("StartTracing = %v", err)
	}
	t.Cleanup(func() { tracing.Shutdown(); otel.SetTracerProvider(prev); otel.SetTextMapPropagator(prevProp) })
	table, cp := newTable(t)
	worker := startRIE(t, 60, fnEnv(table, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_SERVICE_NAME=sortie-worker"))
	key, _ := callback.NewKey("k1")
	ring, _ := callback.NewKeyring(key)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := callback.NewIssuer(ring, "http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine := sortie.NewEngine(cp, &serial{l: newLauncher(t, worker, lambda.Options{})}, probeAgents,
		&sortie.EngineOptions{DefaultPolicy: testPolicy, ReportIssuer: issuer})
	callbacks, err := callback.NewHandler(cp, ring, nil)
	if err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Options{Engine: engine, Callbacks: callbacks})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); engine.Close() })
	rules, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
	  {"name":"orders","match":{"kind":"sqs"},"agent":"probe","variables":{"events":2,"output":"${body.order}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return &traceHost{cp: cp, router: triggers.NewRouter(rules, engine, nil)}
}

// sqsEvent is an SQS batch of one message with body and message attributes.
func sqsEvent(id, body string, attrs map[string]string) json.RawMessage {
	ma := map[string]any{}
	for k, v := range attrs {
		ma[k] = map[string]any{"stringValue": v, "dataType": "String"}
	}
	b, _ := json.Marshal(map[string]any{"Records": []any{map[string]any{"messageId": id, "body": body,
		"eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders", "messageAttributes": ma}}})
	return b
}

// A run started by an SQS message carrying a traceparent is one trace,
// from the producer's span to the finish, across the host and a Lambda
// worker under the emulator that reports over callbacks: the host's
// sortie.trigger (under the producer's span), sortie.submit, sortie.launch
// and its server spans of the callbacks, the worker's sortie.attempt
// (under the launch), sortie.claim and sortie.finish. The next run, on
// the same warm worker with another producer's trace, shares none of it.
func TestTraceAcrossTheLambdaWorker(t *testing.T) {
	col := otlptest.Start(t)
	h := startTraceHost(t, col)
	producers := []string{"4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"}
	for i, traceID := range producers {
		tp := "00-" + traceID + "-00f067aa0ba902b7-01"
		ev := sqsEvent(fmt.Sprintf("m-%d", i), `{"order":"A-1"}`, map[string]string{"traceparent": tp, "tracestate": "congo=t61rcWkgMzE"})
		if out, err := h.router.HandleLambda(context.Background(), ev); err != nil || !strings.Contains(fmt.Sprint(out), "[]") {
			t.Fatalf("HandleLambda = %v, %v; want no item failures", out, err)
		}
		checkOneTrace(t, col, h.cp, traceID)
	}
	for _, traceID := range producers {
		if n := strings.Count(strings.Join(otlptest.Names(col.Trace(traceID)), " "), "sortie.attempt"); n != 1 {
			t.Errorf("trace %s has %d sortie.attempt spans, want 1 (a warm worker kept a trace)", traceID, n)
		}
	}
}

// checkOneTrace waits for the run of the producer's trace to complete and
// for its spans, and checks how they hang together.
func checkOneTrace(t *testing.T, col *otlptest.Collector, cp sortie.ControlPlane, traceID string) {
	t.Helper()
	var run *sortie.Run
	testwait.UntilReport(t, "a completed run in trace "+traceID, 60*time.Second, func() (bool, string) {
		page, _ := cp.List(context.Background(), sortie.ListQuery{})
		for _, r := range page.Runs {
			if strings.Contains(r.TraceParent, traceID) {
				run, _ = cp.Get(context.Background(), r.ID)
				return run.State == sortie.StateCompleted, string(run.State)
			}
		}
		return false, "no run in the trace"
	})
	want := []string{"sortie.trigger", "sortie.submit", "sortie.launch", "sortie.attempt", "sortie.claim", "sortie.finish"}
	var spans map[string]otlptest.Span
	testwait.UntilReport(t, "spans of trace "+traceID, 30*time.Second, func() (bool, string) {
		got := col.Trace(traceID)
		spans = map[string]otlptest.Span{}
		callbacks := 0
		for _, s := range got {
			spans[s.Name] = s
			if strings.Contains(otlptest.Attr(s, "url.path"), callback.PathPrefix) {
				callbacks++
			}
		}
		for _, n := range want {
			if _, ok := spans[n]; !ok {
				return false, fmt.Sprint("spans: ", otlptest.Names(got))
			}
		}
		return callbacks >= 3, fmt.Sprintf("%d callback spans of %v", callbacks, otlptest.Names(got))
	})
	t.Logf("trace %s: %v", traceID, otlptest.Names(col.Trace(traceID)))
	parents := [][2]string{{"sortie.submit", "sortie.trigger"}, {"sortie.launch", "sortie.submit"},
		{"sortie.attempt", "sortie.launch"}, {"sortie.claim", "sortie.attempt"}, {"sortie.finish", "sortie.attempt"}}
	for _, p := range parents {
		if c, pa := spans[p[0]], spans[p[1]]; !slices.Equal(c.ParentSpanId, pa.SpanId) {
			t.Errorf("%s's parent %x, want %s %x", p[0], c.ParentSpanId, p[1], pa.SpanId)
		}
	}
	if got := fmt.Sprintf("%x", spans["sortie.trigger"].ParentSpanId); got != "00f067aa0ba902b7" {
		t.Errorf("sortie.trigger's parent %s, want the producer's span 00f067aa0ba902b7", got)
	}
	for name, service := range map[string]string{"sortie.trigger": "sortie-host", "sortie.attempt": "sortie-worker"} {
		if s := spans[name]; s.Service != service || s.TraceState != "congo=t61rcWkgMzE" {
			t.Errorf("%s: service %q tracestate %q, want %s with the producer's tracestate", name, s.Service, s.TraceState, service)
		}
	}
}
