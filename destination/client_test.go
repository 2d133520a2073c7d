package destination

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

var loopback4 = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// anyHost allows any host whose addresses are allowed.
var anyHost = []string{AnyHost}

func mustClient(t *testing.T, p Policy) *http.Client {
	t.Helper()
	c, err := p.Client()
	if err != nil {
		t.Fatalf("Policy.Client() = %v", err)
	}
	return c
}

// get requests url with c and returns the body, or the error.
func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Each default-refused destination is refused with no connection reaching
// the loopback servers: loopback by address, by name, as IPv4-mapped IPv6,
// and addresses that have no server here (metadata, private).
func TestDefaultRefusals(t *testing.T) {
	s4 := newServer(t, "127.0.0.1:0", false, nil)
	servers := []*server{s4}
	c := mustClient(t, Policy{Allow: anyHost, AllowHTTP: true}) // only the address check stands
	type refusal struct{ url, host, reason string }
	cases := []refusal{
		{s4.URL + "/x?token=secret", "127.0.0.1", "address 127.0.0.1 is loopback"},
		{"http://[::ffff:127.0.0.1]:" + s4.port() + "/", "::ffff:127.0.0.1", "address 127.0.0.1 is loopback"},
		{"http://localhost:" + s4.port() + "/", "localhost", ""}, // loopback, 127.0.0.1 or ::1
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "address 169.254.169.254 is a cloud metadata address"},
		{"http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal", "host metadata.google.internal is a cloud metadata service"},
		{"http://10.0.0.1/", "10.0.0.1", "address 10.0.0.1 is private"},
		{"http://192.168.1.1/", "192.168.1.1", "address 192.168.1.1 is private"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254", "address fd00:ec2::254 is a cloud metadata address"},
		{"http://100.100.100.200/latest/meta-data/", "100.100.100.200", "address 100.100.100.200 is a cloud metadata address"},
		{"http://[64:ff9b::7f00:1]:" + s4.port() + "/", "64:ff9b::7f00:1", "address 64:ff9b::7f00:1 embeds 127.0.0.1, which is loopback"},
	}
	if hasIPv6Loopback() {
		s6 := newServer(t, "[::1]:0", false, nil)
		servers = append(servers, s6)
		cases = append(cases, refusal{s6.URL + "/", "::1", "address ::1 is loopback"})
	} else {
		t.Log("no IPv6 loopback here: ::1 is checked through the dial-time Control function only (TestControl)")
	}
	for _, tc := range cases {
		call := "GET " + tc.url
		_, err := get(c, tc.url)
		if tc.reason == "" {
			var re *RefusedError
			if !errors.As(err, &re) || re.Host != tc.host || !strings.HasSuffix(re.Reason, " is loopback") {
				t.Errorf("%s = %v, want %s refused as loopback", call, err, tc.host)
			}
		} else {
			wantRefused(t, call, err, tc.host, tc.reason)
		}
		if re := refusedOf(err); re != nil && strings.Contains(re.Error(), "token") {
			t.Errorf("%s: RefusedError %q carries the URL's query", call, re)
		}
	}
	for _, s := range servers {
		s.untouched(t, "the default refusals")
	}
}

func refusedOf(err error) *RefusedError {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// The dial-time check itself, called as the dialer calls it: it refuses
// ::1 whether or not this machine has IPv6 loopback.
func TestControl(t *testing.T) {
	c, err := (&Policy{Allow: anyHost, AllowAddrs: loopback4}).compile()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), hostKey{}, "ip6-localhost")
	wantRefused(t, "control(tcp6, [::1]:443)", c.control(ctx, "tcp6", "[::1]:443", nil), "ip6-localhost", "address ::1 is loopback")
	wantRefused(t, "control(tcp6, [::ffff:127.0.0.2]:80)", c.control(context.Background(), "tcp6", "[::ffff:127.0.0.2]:80", nil), "::ffff:127.0.0.2", "address 127.0.0.2 is loopback")
	wantRefused(t, "control(tcp6, [fe80::1%lo]:80)", c.control(context.Background(), "tcp6", "[fe80::1%lo]:80", nil), "fe80::1%lo", "address fe80::1 is link-local")
	wantRefused(t, "control(unix, /tmp/s)", c.control(context.Background(), "unix", "/tmp/s", nil), "/tmp/s", `unix address "/tmp/s" is not an IP address and port`)
	for _, addr := range []string{"127.0.0.1:80", "[::ffff:127.0.0.1]:80", "93.184.215.14:443", "[2606:4700::6810:84e5]:443"} {
		if err := c.control(context.Background(), "tcp", addr, nil); err != nil {
			t.Errorf("AllowAddrs 127.0.0.1/32: control(tcp, %s) = %v, want nil", addr, err)
		}
	}
}

// An allowed server that redirects to a refused destination is refused at
// the redirect: the refused server sees nothing.
func TestRedirectToRefused(t *testing.T) {
	refusedSrv := newServer(t, "127.0.0.2:0", false, nil)
	targets := map[string]struct{ url, host, reason string }{
		"loopback": {refusedSrv.URL + "/x", "127.0.0.2", "address 127.0.0.2 is loopback"},
		"mapped":   {"http://[::ffff:127.0.0.2]:" + refusedSrv.port() + "/", "::ffff:127.0.0.2", "address 127.0.0.2 is loopback"},
		"metadata": {"http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254", "address 169.254.169.254 is a cloud metadata address"},
		"name":     {"http://metadata.google.internal/", "metadata.google.internal", "host metadata.google.internal is a cloud metadata service"},
		"scheme":   {"file:///etc/passwd", "", `scheme "file" is not allowed`},
	}
	allowed := newServer(t, "127.0.0.1:0", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, targets[strings.TrimPrefix(r.URL.Path, "/")].url, http.StatusFound)
	})
	c := mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true})
	for name, tc := range targets {
		_, err := get(c, allowed.URL+"/"+name)
		wantRefused(t, "GET "+allowed.URL+"/"+name+" redirecting to "+tc.url, err, tc.host, tc.reason)
	}
	if n := allowed.requests.Load(); n != int32(len(targets)) {
		t.Errorf("allowed server got %d requests, want %d (one per redirect)", n, len(targets))
	}
	refusedSrv.untouched(t, "redirects to 127.0.0.2")
}

func TestRedirectLimit(t *testing.T) {
	var loop *server
	loop = newServer(t, "127.0.0.1:0", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, loop.URL+"/again", http.StatusFound)
	})
	c := mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true, MaxRedirects: 2})
	_, err := get(c, loop.URL)
	wantRefused(t, "GET of an endless redirect, MaxRedirects 2", err, "127.0.0.1", "more than 2 redirects")
	if n := loop.requests.Load(); n != 3 {
		t.Errorf("MaxRedirects 2: server got %d requests, want 3", n)
	}
	c = mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true, MaxRedirects: -1})
	resp, err := c.Get(loop.URL)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("MaxRedirects -1: GET = %v, %v, want the 302 response", resp, err)
	}
	resp.Body.Close()
}

func TestHostAllowlist(t *testing.T) {
	s := newServer(t, "127.0.0.1:0", false, nil)
	c := mustClient(t, Policy{Allow: []string{"api.example.com", "*.example.org"}, AllowAddrs: loopback4, AllowHTTP: true})
	_, err := get(c, s.URL)
	wantRefused(t, "GET "+s.URL+" (allowlist api.example.com, *.example.org)", err, "127.0.0.1", "host 127.0.0.1 is not in the allowlist")
	s.untouched(t, "a host outside the allowlist")

	c = mustClient(t, Policy{Allow: []string{"127.0.0.1"}, AllowHTTP: true})
	_, err = get(c, s.URL)
	wantRefused(t, "GET "+s.URL+" (allowlist 127.0.0.1, no AllowAddrs)", err, "127.0.0.1", "address 127.0.0.1 is loopback")
	s.untouched(t, "an allowlisted host on a refused address")

	c = mustClient(t, Policy{Allow: []string{"127.0.0.1"}, AllowAddrs: loopback4, AllowHTTP: true})
	if body, err := get(c, s.URL); err != nil || body != "ok" {
		t.Errorf("GET %s (allowlist 127.0.0.1, AllowAddrs 127.0.0.1/32) = %q, %v, want ok", s.URL, body, err)
	}
}

func TestHTTPSOnly(t *testing.T) {
	plain := newServer(t, "127.0.0.1:0", false, nil)
	c := mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4})
	_, err := get(c, plain.URL)
	wantRefused(t, "GET "+plain.URL+" (AllowHTTP false)", err, "127.0.0.1", "scheme http is not allowed (https only)")
	plain.untouched(t, "http with AllowHTTP false")

	secure := newServer(t, "127.0.0.1:0", true, nil)
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	c = mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, RootCAs: roots})
	if body, err := get(c, secure.URL); err != nil || body != "ok" {
		t.Errorf("GET %s (https, AllowAddrs 127.0.0.1/32) = %q, %v, want ok", secure.URL, body, err)
	}
	c = mustClient(t, Policy{Allow: anyHost, RootCAs: roots})
	_, err = get(c, secure.URL)
	wantRefused(t, "GET "+secure.URL+" (https, no AllowAddrs)", err, "127.0.0.1", "address 127.0.0.1 is loopback")
	if n := secure.conns.Load(); n != 1 {
		t.Errorf("https server got %d connections, want 1 (the allowed request's)", n)
	}
}

// A name is checked by the addresses it resolves to, on every connection:
// one that resolves to an allowed address and then rebinds to a refused one
// is refused on the next connection.
func TestDNSRebinding(t *testing.T) {
	first := newServer(t, "127.0.0.1:0", false, nil)
	second := newServer(t, net.JoinHostPort("127.0.0.2", first.port()), false, nil)
	dns := newDNSServer(t, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
	c := mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true, Resolver: dns.resolver()})
	url := "http://rebind.test.:" + first.port() + "/"
	if body, err := get(c, url); err != nil || body != "ok" {
		t.Fatalf("GET %s resolving to 127.0.0.1 = %q, %v, want ok", url, body, err)
	}
	c.CloseIdleConnections()
	_, err := get(c, url)
	wantRefused(t, "GET "+url+" rebound to 127.0.0.2", err, "rebind.test.", "address 127.0.0.2 is loopback")
	second.untouched(t, "a name rebound to 127.0.0.2")
	if q := dns.queries.Load(); q < 2 {
		t.Errorf("DNS server answered %d A queries, want 2 (one per connection)", q)
	}

	private := newDNSServer(t, netip.MustParseAddr("10.0.0.1"))
	c = mustClient(t, Policy{Allow: anyHost, AllowHTTP: true, Resolver: private.resolver()})
	_, err = get(c, "http://intranet.test./")
	wantRefused(t, "GET http://intranet.test./ resolving to 10.0.0.1", err, "intranet.test.", "address 10.0.0.1 is private")
}

// Environment proxies are ignored: the request goes to its destination
// (and is checked there), never to the proxy.
func TestNoEnvironmentProxy(t *testing.T) {
	proxy := newServer(t, "127.0.0.1:0", false, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	target := newServer(t, "127.0.0.1:0", false, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("direct")) })
	// Proxy variables never apply to loopback addresses, so ask for a
	// name: a proxy from the environment would be used for it.
	dns := newDNSServer(t, netip.MustParseAddr("127.0.0.1"))
	c := mustClient(t, Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true, Resolver: dns.resolver()})
	url := "http://target.test.:" + target.port() + "/"
	if body, err := get(c, url); err != nil || body != "direct" {
		t.Errorf("GET %s with HTTP_PROXY=%s = %q, %v, want the target's answer", url, proxy.URL, body, err)
	}
	proxy.untouched(t, "a request with HTTP_PROXY set")
	if tr, ok := c.Transport.(*transport); !ok || tr.base.Proxy != nil {
		t.Errorf("Policy.Client().Transport = %T with a proxy function, want *transport without one", c.Transport)
	}
}
