package destination

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// server is a real HTTP server on a loopback address that counts the
// connections and requests reaching it.
type server struct {
	*httptest.Server
	conns, requests atomic.Int32
}

// newServer starts a server listening on addr ("127.0.0.1:0", "[::1]:0")
// that answers h (or "ok"), over TLS when tls is set.
func newServer(t testing.TB, addr string, tls bool, h http.HandlerFunc) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("net.Listen(tcp, %s) = %v", addr, err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if h == nil {
			_, _ = w.Write([]byte("ok"))
			return
		}
		h(w, r)
	}))
	_ = s.Listener.Close()
	s.Listener = l
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// untouched fails the test when any connection reached s.
func (s *server) untouched(t *testing.T, call string) {
	t.Helper()
	if c, r := s.conns.Load(), s.requests.Load(); c != 0 || r != 0 {
		t.Errorf("%s: server %s got %d connections, %d requests, want none", call, s.URL, c, r)
	}
}

// port returns the server's port.
func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// hasIPv6Loopback reports whether this machine can listen on [::1].
func hasIPv6Loopback() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// wantRefused fails the test unless err is a refusal of host for reason.
func wantRefused(t *testing.T, call string, err error, host, reason string) {
	t.Helper()
	var re *RefusedError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &re) || re.Host != host || re.Reason != reason {
		t.Errorf("%s = %v, want RefusedError{Host: %q, Reason: %q}", call, err, host, reason)
	}
}

// dnsServer is a real DNS server on UDP loopback that answers A queries
// for any name with the next address of its list (the last one repeats),
// and AAAA queries with no address.
type dnsServer struct {
	conn net.PacketConn
	mu   sync.Mutex
	next []netip.Addr
	// queries counts the A queries answered.
	queries atomic.Int32
}

func newDNSServer(t *testing.T, answers ...netip.Addr) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.ListenPacket(udp, 127.0.0.1:0) = %v", err)
	}
	d := &dnsServer{conn: conn, next: answers}
	t.Cleanup(func() { _ = conn.Close() })
	go d.serve()
	return d
}

// resolver returns a resolver that asks only d.
func (d *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.conn.LocalAddr().String())
	}}
}

func (d *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, err := d.answer(buf[:n]); err == nil {
			_, _ = d.conn.WriteTo(out, from)
		}
	}
}

func (d *dnsServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		a := d.take()
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0}
		if err := b.AResource(rh, dnsmessage.AResource{A: a.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// take returns the next answer.
func (d *dnsServer) take() netip.Addr {
	d.queries.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.next[0]
	if len(d.next) > 1 {
		d.next = d.next[1:]
	}
	return a
}
