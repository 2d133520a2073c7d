package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter is an OTLP/HTTP span exporter (binary protobuf, the OTLP
// specification's default HTTP encoding). It is ours rather than the
// SDK's otlptracehttp because that one links gRPC and grpc-gateway
// (through the collector service package) and the protobuf runtime:
// with it the stripped arm64 Lambda bootstrap measured 21.4 MiB instead
// of 11.3 MiB (limit 12 MiB, TestBootstrapSize), where this exporter
// adds 64 KiB. It writes the protobuf wire format itself (transform.go,
// encoding/binary); TestExporterMatchesTheSDKExporter compares its
// requests with the SDK exporter's.
type exporter struct {
	client  *http.Client
	url     string
	headers http.Header
	closed  atomic.Bool
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// exportTries is how often a batch is sent while post says to retry,
// with backoff from 100 ms, while the context lasts.
const exportTries = 3

// env returns the signal's variable OTEL_EXPORTER_OTLP_TRACES_name when
// set, else OTEL_EXPORTER_OTLP_name.
func env(name string) string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_" + name)
}

// newExporter reads the OTLP exporter variables: the traces endpoint (a
// full URL as is; OTEL_EXPORTER_OTLP_ENDPOINT with "/v1/traces" added),
// the protocol (http/protobuf only), headers ("k=v,k2=v2", values
// URL-encoded) and timeout (ms, default 10 s). It names the variable it
// refuses.
func newExporter() (*exporter, error) {
	u := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if u == "" {
		u = strings.TrimRight(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %.200q is not an absolute http(s) URL", sortie.SafeURL(u))
	}
	if p := env("PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; use http/protobuf", p)
	}
	timeout := 10 * time.Second
	if t := env("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT: %q is not a positive number of ms", t)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	h, err := parseHeaders(env("HEADERS"))
	if err != nil {
		return nil, err
	}
	return &exporter{client: &http.Client{Timeout: timeout}, url: u, headers: h}, nil
}

// parseHeaders reads "k=v,k2=v2" with URL-encoded values (the W3C
// Baggage format the OTLP exporter specification names).
func parseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || strings.TrimSpace(k) == "" || err != nil {
			return nil, errors.New("OTEL_EXPORTER_OTLP_HEADERS: want key=value pairs separated by commas")
		}
		h.Add(strings.TrimSpace(k), val)
	}
	return h, nil
}

// ExportSpans posts spans as one ExportTraceServiceRequest.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.closed.Load() || len(spans) == 0 {
		return nil
	}
	body := exportRequest(spans)
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		retry, err := e.post(ctx, body)
		if err == nil || !retry || try == exportTries {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (retries stopped: %w)", err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// post sends body once; retry says whether another try may succeed: the
// collector could not be reached, or answered 429, 502, 503 or 504 (the
// OTLP/HTTP retryable answers).
func (e *exporter) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("otlp: %w", err)
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("otlp: export spans: %w", err)
	}
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s/100 == 2:
		return false, nil
	case s == http.StatusTooManyRequests || s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout:
		return true, fmt.Errorf("otlp: export spans: collector answered %s", resp.Status)
	}
	return false, fmt.Errorf("otlp: export spans: collector answered %s", resp.Status)
}

// Shutdown stops exporting; spans handed over later are dropped.
func (e *exporter) Shutdown(context.Context) error {
	e.closed.Store(true)
	return nil
}
