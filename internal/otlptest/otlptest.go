// Package otlptest is an OTLP/HTTP traces receiver on loopback for tests:
// a real HTTP server decoding the protobuf requests exporters post to
// /v1/traces (gzip or not), keeping every span; it answers other signals'
// requests (/v1/metrics) without reading them.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// T is the part of testing.TB the collector uses.
type T interface {
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Span is a received span with the service.name of its resource.
type Span struct {
	*tracev1.Span
	Service string
}

// Collector receives spans until the test ends.
type Collector struct {
	// URL is the OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
	URL   string
	mu    sync.Mutex
	spans []Span
}

// Start starts a collector, closed when t ends; a request it cannot
// decode fails t.
func Start(t T) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			return // metrics and logs: taken, not kept
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("otlptest: gzip: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("otlptest: %s %s: decode OTLP request: %v", r.Method, r.URL.Path, err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c.add(&req)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *Collector) add(req *coltrace.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		var service string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, Span{Span: s, Service: service})
			}
		}
	}
}

// Trace returns the spans of trace id (32 hex digits), in the order they
// were received.
func (c *Collector) Trace(id string) []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Span
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

// Names returns the sorted names of spans.
func Names(spans []Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// Attr returns the string value of a span's attribute key, or "".
func Attr(s Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}
