package destination

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Client returns an HTTP client that enforces p (see [Policy]) on every
// request, redirect and connection, with its own connection pool. Changes
// to p after the call do not affect it. It returns a
// [*sortie.ValidationError] when p is invalid. A refused request fails
// with an error matching [ErrRefused] that wraps a [*RefusedError]. A nil
// p is the zero Policy.
func (p *Policy) Client() (*http.Client, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: c.transport(), CheckRedirect: c.checkRedirect, Timeout: c.p.Timeout}, nil
}

// Transport returns the [http.RoundTripper] of [Policy.Client]: it checks
// each request's scheme and host, and each connection's address at dial
// time. Redirects are the client's: use it in an [http.Client] whose
// CheckRedirect bounds them, or use [Policy.Client]. It returns a
// [*sortie.ValidationError] when p is invalid.
func (p *Policy) Transport() (http.RoundTripper, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	return c.transport(), nil
}

// transport checks requests, then hands them to base, whose dialer checks
// every address connected to.
type transport struct {
	c    *compiled
	base *http.Transport
}

func (c *compiled) transport() *transport {
	d := &net.Dialer{Timeout: or(c.p.DialTimeout, DefaultDialTimeout), KeepAlive: 30 * time.Second,
		Resolver: c.p.Resolver, ControlContext: c.control}
	base := &http.Transport{
		Proxy: nil, // a proxy would hide the destination from the dial-time check
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, refused(addr, "not a host and port")
			}
			if err := c.checkHost(host); err != nil {
				return nil, err
			}
			return d.DialContext(context.WithValue(ctx, hostKey{}, host), network, addr)
		},
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{RootCAs: c.p.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   or(c.p.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout),
		ResponseHeaderTimeout: c.p.ResponseHeaderTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		ExpectContinueTimeout: time.Second,
	}
	return &transport{c: c, base: base}
}

// RoundTrip refuses a request whose scheme or host the policy refuses,
// closing its body, and sends the others.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.c.checkURL(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the pool's idle connections.
func (t *transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// checkRedirect bounds redirects and checks the next request before it is
// sent (its connection is checked again at dial time).
func (c *compiled) checkRedirect(req *http.Request, via []*http.Request) error {
	limit := or(c.p.MaxRedirects, DefaultMaxRedirects)
	if limit < 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > limit {
		return refused(req.URL.Hostname(), "more than %d redirects", limit)
	}
	return c.checkURL(req.URL)
}

// hostKey is the context key of the host a connection is dialed for.
type hostKey struct{}

// control runs after a connection's socket was made and before it
// connects: it refuses an address the policy refuses.
func (c *compiled) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	host, _ := ctx.Value(hostKey{}).(string)
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused(or(host, address), "%s address %q is not an IP address and port", network, address)
	}
	if host == "" {
		host = ap.Addr().String()
	}
	if why := c.addrRefusal(ap.Addr()); why != "" {
		return refused(host, "%s", why)
	}
	return nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
