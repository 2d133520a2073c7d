package loopback

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Host reports whether host is loopback. host is a name or an address,
// optionally with a port ("localhost", "LOCALHOST:7780", "127.0.0.2",
// "[::1]:80", "::ffff:127.0.0.1"): a listen address, a Host header or a
// URL's host. The empty host (all interfaces, in a listen address) is not
// loopback.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if inner, ok := strings.CutPrefix(host, "["); ok && strings.HasSuffix(inner, "]") {
		host = strings.TrimSuffix(inner, "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// URL reports whether rawURL is an absolute URL whose host is loopback
// (see [Host]); an unparsable URL or one without a host is not.
func URL(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Host != "" && Host(u.Host)
}

// Request reports whether r comes from a loopback client as a host
// without API tokens requires: its Host header is loopback (a page of a
// DNS-rebound name is not) and its Origin, when a browser sent one, is a
// loopback URL (a cross-site page is not). The API (package server) and
// the web UI (package server/ui) both ask it.
func Request(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return Host(r.Host) && (origin == "" || URL(origin))
}
