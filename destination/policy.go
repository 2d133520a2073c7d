package destination

import (
	"crypto/x509"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
)

// Defaults of a [Policy]'s optional fields.
const (
	DefaultMaxRedirects        = 5
	DefaultDialTimeout         = 10 * time.Second
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// Limits checked by [Policy.Validate].
const (
	// MaxRedirectsLimit is the largest MaxRedirects allowed.
	MaxRedirectsLimit = 20
	// maxHostBytes is the longest DNS name (bytes).
	maxHostBytes = 253
)

// AnyHost is the [Policy.Allow] pattern that allows any host whose
// addresses are allowed: with the defaults, HTTPS to public addresses (see
// [PublicHTTPS]).
const AnyHost = "*"

// PublicHTTPS returns the policy that allows HTTPS to any host whose
// addresses are public: Allow [AnyHost] and nothing else. It is what the
// zero Policy allowed before Sortie closed outbound calls by default.
func PublicHTTPS() *Policy { return &Policy{Allow: []string{AnyHost}} }

// LoopbackHTTP returns the policy of local development and tests: HTTP or
// HTTPS to this machine's loopback addresses (127.0.0.0/8, ::1, the name
// localhost) and nowhere else.
func LoopbackHTTP() *Policy {
	return &Policy{Allow: []string{"127.0.0.1", "::1", "localhost"}, AllowHTTP: true,
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
}

// Policy says where outbound HTTP calls made on a run's behalf may go. The
// zero Policy allows nothing: every host must be listed in Allow, or
// Allow must hold [AnyHost] for any host whose addresses are public, with
// at most 5 redirects. It is checked on every request and redirect (scheme and
// host) and on every connection, at dial time, against the address actually
// connected to, so redirects, DNS rebinding and Happy Eyeballs fallbacks
// cannot get around it. Environment proxies are never used.
//
// Refused unless AllowAddrs covers them: loopback (127.0.0.0/8, ::1),
// unspecified, private (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// fc00::/7), shared address space 100.64.0.0/10, link-local
// (169.254.0.0/16, fe80::/10), multicast, broadcast, 0.0.0.0/8, the other
// reserved ranges, and the cloud metadata addresses (169.254.169.254,
// fd00:ec2::254, 169.254.170.2, 100.100.100.200). An IPv4-mapped IPv6
// address is checked as its IPv4 address, and a NAT64 (64:ff9b::/96) or
// 6to4 (2002::/16) address as the IPv4 address it embeds. The metadata host
// names (metadata.google.internal, metadata, instance-data, ...) are refused
// by name before any DNS lookup unless Allow names them exactly.
type Policy struct {
	// Allow is the host allowlist: exact names ("api.example.com"), or
	// "*.example.com" for any name under example.com (not example.com
	// itself), or IP addresses, or [AnyHost] ("*") for any host;
	// case-insensitive, without port. Allowing a host does not allow a
	// refused address: AllowAddrs does. Optional; empty allows no host,
	// so every outbound call is refused.
	Allow []string
	// AllowAddrs are address ranges allowed even though they are refused
	// by default, such as 127.0.0.1/32 in tests or 10.1.0.0/16 for an
	// internal service. It is the only way such an address becomes
	// reachable. IPv4 ranges must be written as IPv4, not IPv4-mapped.
	// Optional; defaults to none.
	AllowAddrs []netip.Prefix
	// AllowHTTP allows plain http URLs. Optional; defaults to false
	// (https only).
	AllowHTTP bool
	// MaxRedirects is how many redirects a request follows, at most
	// [MaxRedirectsLimit]; -1 follows none (the redirect response is
	// returned). Optional; defaults (0) to 5.
	MaxRedirects int
	// DialTimeout bounds one connection attempt. Optional; defaults to
	// 10 s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds a TLS handshake. Optional; defaults to
	// 10 s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// the request was written. Optional; defaults (0) to no bound but
	// Timeout and the request's context (a model API may think for
	// minutes before it answers; a webhook sender should set it).
	ResponseHeaderTimeout time.Duration
	// Timeout bounds a whole request: connections, redirects and reading
	// the body. Optional; defaults (0) to no bound but the request's
	// context.
	Timeout time.Duration
	// Resolver looks up host names; the addresses it returns are checked
	// like any other. Optional; defaults to the system's resolver.
	Resolver *net.Resolver
	// RootCAs are the certificate authorities trusted for HTTPS.
	// Optional; defaults to the system's roots.
	RootCAs *x509.CertPool
}

// compiled is a validated copy of a Policy.
type compiled struct {
	any      bool     // Allow holds AnyHost
	exact    []string // lower-case names and canonical addresses
	suffixes []string // ".example.com" of "*.example.com"
	addrs    []netip.Prefix
	http     bool
	p        Policy
}

// Validate checks p: every Allow pattern a host name, "*." and a host name,
// or an IP address; every AllowAddrs prefix valid and not IPv4-mapped;
// MaxRedirects from -1 to [MaxRedirectsLimit]; timeouts not negative. It
// returns a [*sortie.ValidationError] naming the field.
func (p *Policy) Validate() error {
	_, err := p.compile()
	return err
}

func (p *Policy) compile() (*compiled, error) {
	if p == nil {
		p = &Policy{}
	}
	c := &compiled{http: p.AllowHTTP, p: *p}
	for i, pat := range p.Allow {
		if err := c.addPattern(pat); err != nil {
			return nil, sortie.Invalidf("allow["+strconv.Itoa(i)+"]", "%q: %s", pat, err.Error())
		}
	}
	for i, pr := range p.AllowAddrs {
		switch {
		case !pr.IsValid():
			return nil, sortie.Invalidf("allow_addrs["+strconv.Itoa(i)+"]", "not a valid prefix")
		case pr.Addr().Is4In6():
			return nil, sortie.Invalidf("allow_addrs["+strconv.Itoa(i)+"]", "%s is IPv4-mapped; write it as IPv4", pr)
		case pr.Addr().Zone() != "":
			return nil, sortie.Invalidf("allow_addrs["+strconv.Itoa(i)+"]", "%s has a zone", pr)
		}
		c.addrs = append(c.addrs, pr.Masked())
	}
	if p.MaxRedirects < -1 || p.MaxRedirects > MaxRedirectsLimit {
		return nil, sortie.Invalidf("max_redirects", "%d is outside -1..%d", p.MaxRedirects, MaxRedirectsLimit)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial_timeout", p.DialTimeout}, {"tls_handshake_timeout", p.TLSHandshakeTimeout},
		{"response_header_timeout", p.ResponseHeaderTimeout}, {"timeout", p.Timeout}} {
		if d.v < 0 {
			return nil, sortie.Invalidf(d.name, "%s is negative", d.v)
		}
	}
	return c, nil
}

type patternError string

func (e patternError) Error() string { return string(e) }

// addPattern adds an Allow pattern.
func (c *compiled) addPattern(pat string) error {
	if pat == AnyHost {
		c.any = true
		return nil
	}
	if a, err := netip.ParseAddr(pat); err == nil {
		c.exact = append(c.exact, a.Unmap().String())
		return nil
	}
	name := normalize(pat)
	wild := strings.HasPrefix(name, "*.")
	if wild {
		name = name[2:]
	}
	if !validName(name) {
		return patternError("want a host name, *.NAME, an IP address or * for any host, without scheme, port or path")
	}
	if wild {
		c.suffixes = append(c.suffixes, "."+name)
	} else {
		c.exact = append(c.exact, name)
	}
	return nil
}

// validName reports whether s is a DNS name: dot-separated labels of 1-63
// letters, digits, hyphens or underscores, at most 253 bytes.
func validName(s string) bool {
	if s == "" || len(s) > maxHostBytes {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// normalize lower-cases a host name and drops a trailing dot.
func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// Check checks rawURL's scheme and host, and its address when the host is
// an IP address, without any DNS lookup: for refusing a webhook URL when it
// is configured, before any request. A name that passes may still be
// refused at dial time for the addresses it resolves to. It returns a
// [*RefusedError] (matching [ErrRefused]), or a [*sortie.ValidationError]
// when p is invalid. Neither names rawURL's path or query.
func (p *Policy) Check(rawURL string) error {
	c, err := p.compile()
	if err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return refused("", "not a valid URL") // url.Parse's error quotes the URL
	}
	if err := c.checkURL(u); err != nil {
		return err
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := c.addrRefusal(a); why != "" {
			return refused(u.Hostname(), "%s", why)
		}
	}
	return nil
}

// checkURL checks a request's scheme and host (no DNS lookup).
func (c *compiled) checkURL(u *url.URL) error {
	host := u.Hostname()
	switch u.Scheme {
	case "https":
	case "http":
		if !c.http {
			return refused(host, "scheme http is not allowed (https only)")
		}
	default:
		return refused(host, "scheme %q is not allowed", u.Scheme)
	}
	return c.checkHost(host)
}

// checkHost checks a host name or address against the allowlist and the
// metadata names.
func (c *compiled) checkHost(host string) error {
	if host == "" {
		return refused(host, "the URL has no host")
	}
	name := normalize(host)
	if a, err := netip.ParseAddr(name); err == nil {
		name = a.Unmap().String()
	}
	if slices.Contains(c.exact, name) {
		return nil
	}
	if slices.Contains(metadataNames, name) {
		return refused(host, "host %s is a cloud metadata service", name)
	}
	if c.any {
		return nil
	}
	for _, s := range c.suffixes {
		if strings.HasSuffix(name, s) {
			return nil
		}
	}
	if len(c.exact) == 0 && len(c.suffixes) == 0 {
		return refused(host, "the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)")
	}
	return refused(host, "host %s is not in the allowlist", name)
}

// addrRefusal says why the policy refuses address a ("address 127.0.0.1
// is loopback"), or returns "".
func (c *compiled) addrRefusal(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if why := c.refusal(a); why != "" {
		return "address " + a.String() + " " + why
	}
	return ""
}

// refusal says why a (unmapped, without zone) is refused ("is loopback",
// "embeds 127.0.0.1, which is loopback"), or returns "".
func (c *compiled) refusal(a netip.Addr) string {
	for _, pr := range c.addrs {
		if pr.Contains(a) {
			return ""
		}
	}
	if v4, ok := embeddedIPv4(a); ok {
		if why := c.refusal(v4); why != "" {
			return "embeds " + v4.String() + ", which " + why
		}
		return ""
	}
	if why := classify(a); why != "" {
		return "is " + why
	}
	return ""
}
