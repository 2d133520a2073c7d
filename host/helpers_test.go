package host_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/server/httpengine"
)

// waitLong bounds waits for a run to end or a webhook to arrive.
const waitLong = 30 * time.Second

// testToken is the API token of served test hosts.
const testToken = "host-test-token-0123456789"

// served is a host serving on a loopback port until the test ends.
type served struct {
	h      *host.Host
	url    string
	client *sortie.Client // over HTTP, with the API token
	stop   func() error   // ends Serve and returns its error
}

// newHost builds the host of cfg, closed when the test ends.
func newHost(t *testing.T, cfg host.Config) *host.Host {
	t.Helper()
	h, err := host.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("host.New(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// listen listens on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve builds the host of cfg (its API from cfg.API, else one with the
// test token) and serves it on ln (a fresh loopback listener when nil).
func serve(t *testing.T, cfg host.Config, ln net.Listener) *served {
	t.Helper()
	if ln == nil {
		ln = listen(t)
	}
	if cfg.API == nil {
		cfg.API = &host.API{Tokens: []string{testToken}}
	}
	h := newHost(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	s := &served{h: h, url: "http://" + ln.Addr().String()}
	var stopped bool
	var serveErr error
	s.stop = func() error {
		if !stopped {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(waitLong):
				t.Fatal("Serve did not return within 30 s of its context ending")
			}
			stopped = true
		}
		return serveErr
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("Serve = %v, want nil after a clean shutdown", err)
		}
	})
	remote, err := httpengine.New(s.url, &httpengine.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	s.client = sortie.NewClient(remote, nil)
	return s
}

// wait waits for run id to end (or pause) and returns it.
func wait(t *testing.T, c *sortie.Client, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	run, err := c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

// probe submits a run of the probe agent with vars.
func probe(t *testing.T, c *sortie.Client, vars string) *sortie.Run {
	t.Helper()
	run, err := c.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(vars)})
	if err != nil {
		t.Fatalf("Submit(probe, %s) = %v", vars, err)
	}
	return run
}
