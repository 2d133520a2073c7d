// Package hooktest is a webhook receiver for tests: a real HTTP server on
// loopback that verifies Standard Webhooks signatures (package
// crypto/sign) and counts the connections it accepted and the requests
// it verified, so a test can tell that a refused call never connected.
package hooktest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie/crypto/sign"
)

// Body is what the receiver answers a verified request with (200).
const Body = `{"ok":true}`

// Receiver is a running receiver; it stops when the test ends.
type Receiver struct {
	URL string
	// Accepts counts the connections the listener accepted.
	Accepts atomic.Int64
	// Verified counts the requests whose signature verified; others are
	// answered 401.
	Verified atomic.Int64
}

// Start starts a receiver verifying signatures made with secret.
func Start(t testing.TB, secret string) *Receiver {
	t.Helper()
	v, err := sign.NewVerifier([]string{secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := v.VerifyRequest(req, 1<<20); err != nil {
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		r.Verified.Add(1)
		w.Write([]byte(Body))
	}))
	srv.Listener = &counting{Listener: srv.Listener, n: &r.Accepts}
	srv.Start()
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

type counting struct {
	net.Listener
	n *atomic.Int64
}

func (l *counting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// CountAccepts makes srv, not yet started, count the connections its
// listener accepts.
func CountAccepts(srv *httptest.Server) *atomic.Int64 {
	n := new(atomic.Int64)
	srv.Listener = &counting{Listener: srv.Listener, n: n}
	return n
}
