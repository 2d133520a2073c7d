package functions

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
)

// fetchHandler GETs url with the call's HTTP client and returns the body;
// a refusal fails the attempt with its reason. It sends each client it
// was given on clients.
func fetchHandler(url string, clients chan<- *http.Client) Handler {
	return func(ctx context.Context, c *Call) (any, error) {
		clients <- c.HTTPClient()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, Permanent(err)
		}
		resp, err := c.HTTPClient().Do(req)
		var re *destination.RefusedError
		if errors.As(err, &re) && errors.Is(err, destination.ErrRefused) {
			return nil, Permanent(fmt.Errorf("refused: %s", re.Reason))
		} else if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
}

// A go handler's outbound call to a loopback HTTPS server is refused by default
// (nothing reaches the server) and goes through when Destinations allows
// the address.
func TestCallHTTPClientDestinations(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("pong"))
	}))
	t.Cleanup(srv.Close)
	clients := make(chan *http.Client, 3)
	url := srv.URL + "/hook?token=s3cret"

	w, _ := newWorker(register(fetchHandler(url, clients)))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatalf("Execute(default Destinations) = %v", err)
	}
	want := &sortie.ErrorMessage{Type: errTypeError, Message: "refused: the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)"}
	if d := cmp.Diff(want, rep.finished().Error); d != "" {
		t.Errorf("handler GET %s with the default policy finished with (-want +got):\n%s", url, d)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests under the default policy, want 0", n)
	}

	w, _ = newWorker(register(fetchHandler(url, clients)))
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	w.Destinations = &destination.Policy{Allow: []string{destination.AnyHost}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, RootCAs: roots}
	workers := []*Worker{w, {Registry: w.Registry, Logger: w.Logger, Destinations: w.Destinations}}
	for i, w := range workers {
		rep = newRecorder(t)
		if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
			t.Fatalf("Execute(AllowAddrs 127.0.0.1/32) #%d = %v", i+1, err)
		}
		if got := rep.finished(); got.Error != nil || string(got.Result) != `"pong"` {
			t.Errorf("handler GET %s with AllowAddrs 127.0.0.1/32 finished with %+v, want result \"pong\"", url, got)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("server got %d requests from two workers with AllowAddrs 127.0.0.1/32, want 2", n)
	}
	_, second, third := <-clients, <-clients, <-clients
	if second != third {
		t.Errorf("Call.HTTPClient() differs between workers with one Destinations policy, want one client per policy")
	}
}

// outcomeHandler GETs url with the call's HTTP client and returns what
// happened: "refused: REASON", "failed" or "reached".
func outcomeHandler(url string) Handler {
	return func(ctx context.Context, c *Call) (any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, Permanent(err)
		}
		resp, err := c.HTTPClient().Do(req)
		var re *destination.RefusedError
		switch {
		case errors.As(err, &re):
			return "refused: " + re.Reason, nil
		case err != nil:
			return "failed", nil
		}
		resp.Body.Close()
		return "reached", nil
	}
}

// A handler of a worker without a destination policy cannot reach a
// public host: the request is refused before any lookup. A test resolver
// counts lookups and answers none, so nothing leaves the machine; the
// public-HTTPS policy with the same resolver does look the host up, which
// shows the count would see an attempt.
func TestNoPolicyReachesNoPublicHost(t *testing.T) {
	var lookups atomic.Int32
	resolver := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		lookups.Add(1)
		return nil, errors.New("no DNS in this test")
	}}
	const url = "https://api.public-host.example/v1/things"
	const closed = `"refused: the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)"`
	for _, c := range []struct {
		name   string
		policy *destination.Policy
		want   string
		lookup bool
	}{
		{"no policy", nil, closed, false},
		{"zero policy with the test resolver", &destination.Policy{Resolver: resolver}, closed, false},
		{"public HTTPS with the test resolver", &destination.Policy{Allow: []string{destination.AnyHost}, Resolver: resolver}, `"failed"`, true},
	} {
		lookups.Store(0)
		w, _ := newWorker(register(outcomeHandler(url)))
		w.Destinations = c.policy
		rep := newRecorder(t)
		if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
			t.Fatalf("%s: Execute = %v", c.name, err)
		}
		if got := string(rep.finished().Result); got != c.want {
			t.Errorf("%s: handler GET %s = %s, want %s", c.name, url, got, c.want)
		}
		if got := lookups.Load() > 0; got != c.lookup {
			t.Errorf("%s: the test resolver saw %d lookups, want any: %v", c.name, lookups.Load(), c.lookup)
		}
	}
}

// An invalid policy fails Execute before the claim, naming the field.
func TestInvalidDestinations(t *testing.T) {
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "ran", nil }))
	w.Destinations = &destination.Policy{Allow: []string{"https://api.example.com"}}
	rep := newRecorder(t)
	_, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "destinations.allow[0]" {
		t.Errorf("Execute(Destinations.Allow [https://api.example.com]) = %v, want a ValidationError for destinations.allow[0]", err)
	}
	if rep.claims != 0 {
		t.Errorf("Execute with invalid Destinations claimed %d times, want 0", rep.claims)
	}
}

// The client cache does not keep a policy alive: its entry goes once the
// policy is collected.
func TestHTTPClientCacheReleasesPolicy(t *testing.T) {
	p := &destination.Policy{AllowHTTP: true}
	if _, err := httpClientFor(p); err != nil {
		t.Fatalf("httpClientFor(AllowHTTP) = %v", err)
	}
	key := weak.Make(p)
	if _, ok := httpClients.Load(key); !ok {
		t.Fatalf("httpClients has no entry for a policy just used, want one")
	}
	p = nil
	waitFor(t, "the client cache entry of a collected policy to go", func() bool {
		runtime.GC()
		_, ok := httpClients.Load(key)
		return !ok
	})
}
