package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/metrictest"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/sortie-run/sortie/wire"
)

// faultyReserve is a control plane whose Reserve fails with err while it
// is set.
type faultyReserve struct {
	sortie.ControlPlane
	mu  sync.Mutex
	err error
}

func (f *faultyReserve) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *faultyReserve) Reserve(ctx context.Context, res *sortie.Reservation) (*sortie.Run, bool, error) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return nil, false, fmt.Errorf("reserve: %w", err)
	}
	return f.ControlPlane.Reserve(ctx, res)
}

// newFaultyServer is a server over a faulty control plane whose attempts
// go nowhere.
func newFaultyServer(t *testing.T) (*faultyReserve, *httptest.Server) {
	cp := &faultyReserve{ControlPlane: memory.New()}
	l, err := local.New(&local.Options{InProcess: func(context.Context, *sortie.Invocation) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	engine := sortie.NewEngine(cp, l, probeAgents, nil)
	srv, err := server.New(server.Options{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(func() { h.Close(); engine.Close(); l.Close() })
	return cp, h
}

// Throttling is its own answer: 429 "throttled" with Retry-After, told
// apart from 503 "unavailable" (also with Retry-After), each counted by
// its metric; the Go client maps them back to ErrThrottled and
// ErrUnavailable.
func TestThrottledAndUnavailableAnswers(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	cp, h := newFaultyServer(t)
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{sortie.ErrThrottled, 429, wire.CodeThrottled},
		{sortie.ErrUnavailable, 503, wire.CodeUnavailable},
		{nil, 201, ""},
	} {
		cp.set(c.err)
		resp, err := http.Post(h.URL+"/v1/runs", "application/json", strings.NewReader(`{"agent":"probe"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); resp.StatusCode != c.status || (c.err != nil) != (ra == "1") {
			t.Errorf("POST /v1/runs with Reserve failing %v = %d, Retry-After %q; want %d with Retry-After 1 exactly for refusals", c.err, resp.StatusCode, ra, c.status)
		}
		if c.err == nil {
			continue
		}
		client, _ := httpengine.New(h.URL, nil)
		_, err = client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
		var he *httpengine.HostError
		if !errors.Is(err, c.err) || !errors.As(err, &he) || he.Detail.Code != c.code || he.RetryAfter != time.Second {
			t.Errorf("Submit with Reserve failing %v = %v, want it matching the sentinel, code %q, RetryAfter 1s", c.err, err, c.code)
		}
	}
	want := map[string]int64{server.MetricThrottled + " POST /v1/runs": 2, server.MetricUnavailable + " POST /v1/runs": 2}
	got := metrictest.Sums(t, reader, "http.route")
	for k := range got { // the engine's and the control plane's counters are not the server's
		if !strings.HasPrefix(k, server.MetricThrottled+" ") && !strings.HasPrefix(k, server.MetricUnavailable+" ") {
			delete(got, k)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refusal counters = %v, want %v", got, want)
	}
}

// The Go client retries a keyed submission answered 429, waiting the
// answer's Retry-After; an unkeyed one is not retried (it might have been
// stored).
func TestClientHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var hits []time.Time
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		n := len(hits)
		mu.Unlock()
		if n == 1 || r.Header.Get(wire.IdempotencyKeyHeader) == "" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":"throttled","message":"slow down"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"%s","state":"submitted","agent":{"name":"probe","runtime":"go:probe"},"created_ms":1,"updated_ms":1,"version":1}`, sortie.NewRunID(time.Now()))
	}))
	defer h.Close()
	client, _ := httpengine.New(h.URL, nil)
	if _, created, err := client.SubmitCreated(context.Background(), &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: "k1"}); err != nil || !created {
		t.Fatalf("SubmitCreated(keyed, first answer 429) = %v, %v; want created after a retry", created, err)
	}
	mu.Lock()
	if len(hits) != 2 || hits[1].Sub(hits[0]) < time.Second {
		t.Errorf("requests %d, the retry %v after the 429; want 2, at least the Retry-After of 1s", len(hits), hits[len(hits)-1].Sub(hits[0]))
	}
	hits = nil
	mu.Unlock()
	if _, err := client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"}); !errors.Is(err, sortie.ErrThrottled) {
		t.Errorf("Submit(unkeyed) answered 429 = %v, want ErrThrottled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 1 {
		t.Errorf("unkeyed submission sent %d times, want once", len(hits))
	}
}

// gatedReserve is a control plane whose Reserve waits for gate.
type gatedReserve struct {
	sortie.ControlPlane
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedReserve) Reserve(ctx context.Context, res *sortie.Reservation) (*sortie.Run, bool, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.ControlPlane.Reserve(ctx, res)
}

// Submissions beyond MaxSubmits in flight are shed at once with 429
// throttled and Retry-After, instead of queued; once one ends, the next
// is taken.
func TestSubmissionsBeyondTheLimitAreShed(t *testing.T) {
	cp := &gatedReserve{ControlPlane: memory.New(), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	l, err := local.New(&local.Options{InProcess: func(context.Context, *sortie.Invocation) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	engine := sortie.NewEngine(cp, l, probeAgents, nil)
	srv, err := server.New(server.Options{Engine: engine, MaxSubmits: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(func() { h.Close(); engine.Close(); l.Close() })
	post := func() *http.Response {
		resp, err := http.Post(h.URL+"/v1/runs", "application/json", strings.NewReader(`{"agent":"probe"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := make(chan int)
	go func() { first <- post().StatusCode }()
	<-cp.entered
	if resp := post(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("POST /v1/runs with one submission in flight (limit 1) = %d, Retry-After %q; want 429 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(cp.gate)
	if got := <-first; got != http.StatusCreated {
		t.Errorf("the submission in flight = %d, want 201", got)
	}
	go func() { <-cp.entered }()
	if resp := post(); resp.StatusCode != http.StatusCreated {
		t.Errorf("POST /v1/runs after the one in flight ended = %d, want 201", resp.StatusCode)
	}
}
