package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie/internal/otlptest"
	"github.com/sortie-run/sortie/internal/testwait"
)

// TestTraceFromSubmitThroughWorker: a submission carrying a W3C
// traceparent yields one trace, exported over OTLP by serve and by the
// worker subprocess: the HTTP server span, sortie.submit, sortie.launch,
// then the worker's sortie.attempt, sortie.claim and sortie.finish, each
// under the one before.
func TestTraceFromSubmitThroughWorker(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	col := otlptest.Start(t)
	c := newCLI(t)
	url := startServeCmd(t, c, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL, "OTEL_BSP_SCHEDULE_DELAY=50"})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/runs", strings.NewReader(`{"agent": "probe", "variables": {"events": 1}}`))
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs with a traceparent = %v, %v", resp, err)
	}
	resp.Body.Close()
	chain := []string{"POST /v1/runs", "sortie.submit", "sortie.launch", "sortie.attempt", "sortie.finish"}
	spans := map[string]otlptest.Span{}
	testwait.UntilReport(t, "spans "+strings.Join(chain, ", ")+" in the trace", 30*time.Second, func() (bool, string) {
		got := col.Trace(traceID)
		for _, s := range got {
			spans[s.Name] = s
		}
		for _, n := range chain {
			if _, ok := spans[n]; !ok {
				return false, fmt.Sprint("spans seen: ", otlptest.Names(got))
			}
		}
		return true, ""
	})
	if got := spans["POST /v1/runs"].ParentSpanId; string(got) != "\x00\xf0\x67\xaa\x0b\xa9\x02\xb7" {
		t.Errorf("server span's parent %x, want the client's span 00f067aa0ba902b7", got)
	}
	for i := 1; i < len(chain)-1; i++ {
		child, parent := spans[chain[i]], spans[chain[i-1]]
		if string(child.ParentSpanId) != string(parent.SpanId) {
			t.Errorf("%s's parent is %x, want %s (%x)", chain[i], child.ParentSpanId, chain[i-1], parent.SpanId)
		}
	}
	if f, a := spans["sortie.finish"], spans["sortie.attempt"]; string(f.ParentSpanId) != string(a.SpanId) {
		t.Errorf("sortie.finish's parent is %x, want sortie.attempt (%x)", f.ParentSpanId, a.SpanId)
	}
}
