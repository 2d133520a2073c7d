package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/sortie-run/sortie/internal/testwait"
)

// collector is an OTLP/HTTP traces receiver on loopback.
type collector struct {
	mu    sync.Mutex
	spans map[string]*tracev1.Span // by name, of the wanted trace
	srv   *httptest.Server
}

func newCollector(t *testing.T, traceID []byte) *collector {
	c := &collector{spans: map[string]*tracev1.Span{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("collector: gzip: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: decode OTLP request: %v", err)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if string(s.TraceId) == string(traceID) {
						c.spans[s.Name] = s
					}
				}
			}
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// TestTraceFromSubmitThroughWorker: a submission carrying a W3C
// traceparent yields one trace, exported over OTLP by serve and by the
// worker subprocess: the HTTP server span, sortie.submit, sortie.launch,
// then the worker's sortie.attempt, sortie.claim and sortie.finish, each
// under the one before.
func TestTraceFromSubmitThroughWorker(t *testing.T) {
	traceID := []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	col := newCollector(t, traceID)
	c := newCLI(t)
	url := startServeCmd(t, c, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=50"})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/runs", strings.NewReader(`{"agent": "probe", "variables": {"events": 1}}`))
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs with a traceparent = %v, %v", resp, err)
	}
	resp.Body.Close()
	chain := []string{"POST /v1/runs", "sortie.submit", "sortie.launch", "sortie.attempt", "sortie.finish"}
	testwait.UntilReport(t, "spans "+strings.Join(chain, ", ")+" in the trace", 30*time.Second, func() (bool, string) {
		col.mu.Lock()
		defer col.mu.Unlock()
		var seen []string
		for n := range col.spans {
			seen = append(seen, n)
		}
		for _, n := range chain {
			if col.spans[n] == nil {
				return false, fmt.Sprint("spans seen: ", seen)
			}
		}
		return true, ""
	})
	col.mu.Lock()
	defer col.mu.Unlock()
	if got := col.spans["POST /v1/runs"].ParentSpanId; string(got) != "\x00\xf0\x67\xaa\x0b\xa9\x02\xb7" {
		t.Errorf("server span's parent %x, want the client's span 00f067aa0ba902b7", got)
	}
	for i := 1; i < len(chain)-1; i++ {
		child, parent := col.spans[chain[i]], col.spans[chain[i-1]]
		if string(child.ParentSpanId) != string(parent.SpanId) {
			t.Errorf("%s's parent is %x, want %s (%x)", chain[i], child.ParentSpanId, chain[i-1], parent.SpanId)
		}
	}
	if f, a := col.spans["sortie.finish"], col.spans["sortie.attempt"]; string(f.ParentSpanId) != string(a.SpanId) {
		t.Errorf("sortie.finish's parent is %x, want sortie.attempt (%x)", f.ParentSpanId, a.SpanId)
	}
}
