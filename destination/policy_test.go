package destination

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

func TestAddrRefusal(t *testing.T) {
	zero, err := (&Policy{}).compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", "address 127.0.0.1 is loopback"},
		{"127.255.0.9", "address 127.255.0.9 is loopback"},
		{"::1", "address ::1 is loopback"},
		{"::ffff:127.0.0.1", "address 127.0.0.1 is loopback"},
		{"0.0.0.0", "address 0.0.0.0 is unspecified"},
		{"::", "address :: is unspecified"},
		{"0.1.2.3", `address 0.1.2.3 is in 0.0.0.0/8 ("this network")`},
		{"10.0.0.1", "address 10.0.0.1 is private"},
		{"172.16.5.4", "address 172.16.5.4 is private"},
		{"172.31.255.255", "address 172.31.255.255 is private"},
		{"192.168.1.1", "address 192.168.1.1 is private"},
		{"::ffff:192.168.1.1", "address 192.168.1.1 is private"},
		{"fd12::1", "address fd12::1 is private"},
		{"fc00::1", "address fc00::1 is private"},
		{"100.64.0.1", "address 100.64.0.1 is shared address space (100.64.0.0/10, carrier-grade NAT)"},
		{"100.100.100.200", "address 100.100.100.200 is a cloud metadata address"},
		{"169.254.169.254", "address 169.254.169.254 is a cloud metadata address"},
		{"::ffff:169.254.169.254", "address 169.254.169.254 is a cloud metadata address"},
		{"169.254.170.2", "address 169.254.170.2 is a cloud metadata address"},
		{"fd00:ec2::254", "address fd00:ec2::254 is a cloud metadata address"},
		{"169.254.1.1", "address 169.254.1.1 is link-local"},
		{"fe80::1", "address fe80::1 is link-local"},
		{"fe80::1%eth0", "address fe80::1 is link-local"},
		{"224.0.0.1", "address 224.0.0.1 is multicast"},
		{"ff02::1", "address ff02::1 is multicast"},
		{"255.255.255.255", "address 255.255.255.255 is broadcast"},
		{"240.0.0.1", "address 240.0.0.1 is reserved (240.0.0.0/4)"},
		{"192.0.0.192", "address 192.0.0.192 is reserved for IETF protocol assignments (192.0.0.0/24)"},
		{"198.18.0.1", "address 198.18.0.1 is reserved for benchmarking (198.18.0.0/15)"},
		{"::7f00:1", "address ::7f00:1 is IPv4-compatible IPv6 (::/96, deprecated)"},
		{"fec0::1", "address fec0::1 is site-local (fec0::/10, deprecated)"},
		{"64:ff9b::7f00:1", "address 64:ff9b::7f00:1 embeds 127.0.0.1, which is loopback"},
		{"64:ff9b::a9fe:a9fe", "address 64:ff9b::a9fe:a9fe embeds 169.254.169.254, which is a cloud metadata address"},
		{"64:ff9b:1::1", "address 64:ff9b:1::1 is NAT64 local-use (64:ff9b:1::/48)"},
		{"2002:a00:1::1", "address 2002:a00:1::1 embeds 10.0.0.1, which is private"},
		{"2002:7f00:1::", "address 2002:7f00:1:: embeds 127.0.0.1, which is loopback"},
		// Public addresses, also when embedded.
		{"93.184.215.14", ""},
		{"::ffff:93.184.215.14", ""},
		{"2606:4700::6810:84e5", ""},
		{"64:ff9b::5db8:d70e", ""},
		{"2002:5db8:d70e::1", ""},
		{"100.128.0.1", ""},
		{"172.32.0.1", ""},
	} {
		if got := zero.addrRefusal(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("zero Policy: addrRefusal(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestAllowAddrs(t *testing.T) {
	c, err := (&Policy{AllowAddrs: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00:ec2::/32"),
	}}).compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", ""},
		{"::ffff:127.0.0.1", ""},
		{"64:ff9b::7f00:1", ""},
		{"127.0.0.2", "address 127.0.0.2 is loopback"},
		{"::1", "address ::1 is loopback"},
		{"10.1.200.3", ""},
		{"10.2.0.1", "address 10.2.0.1 is private"},
		{"fd00:ec2::254", ""},
		{"169.254.169.254", "address 169.254.169.254 is a cloud metadata address"},
	} {
		if got := c.addrRefusal(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("AllowAddrs 127.0.0.1/32, 10.1.0.0/16, fd00:ec2::/32: addrRefusal(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestCheckHost(t *testing.T) {
	closed, _ := (&Policy{}).compile()
	open, _ := (&Policy{Allow: []string{AnyHost}}).compile()
	listed, err := (&Policy{Allow: []string{"API.example.com", "*.example.org", "10.0.0.7", "metadata.google.internal"}}).compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c          *compiled
		name, host string
		want       string // "" allowed, else the reason
	}{
		{closed, "zero", "anything.example.net", "the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)"},
		{closed, "zero", "10.0.0.7", "the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)"},
		{open, "open", "anything.example.net", ""},
		{open, "open", "metadata.google.internal", "host metadata.google.internal is a cloud metadata service"},
		{open, "open", "Metadata.Google.Internal.", "host metadata.google.internal is a cloud metadata service"},
		{open, "open", "metadata", "host metadata is a cloud metadata service"},
		{open, "open", "instance-data", "host instance-data is a cloud metadata service"},
		{listed, "listed", "api.example.com", ""},
		{listed, "listed", "api.example.com.", ""},
		{listed, "listed", "x.api.example.com", "host x.api.example.com is not in the allowlist"},
		{listed, "listed", "a.example.org", ""},
		{listed, "listed", "a.b.example.org", ""},
		{listed, "listed", "example.org", "host example.org is not in the allowlist"},
		{listed, "listed", "badexample.org", "host badexample.org is not in the allowlist"},
		{listed, "listed", "10.0.0.7", ""},
		{listed, "listed", "::ffff:10.0.0.7", ""},
		{listed, "listed", "10.0.0.8", "host 10.0.0.8 is not in the allowlist"},
		{listed, "listed", "metadata.google.internal", ""},
		{listed, "listed", "metadata", "host metadata is a cloud metadata service"},
	} {
		err := tc.c.checkHost(tc.host)
		var re *RefusedError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s policy: checkHost(%q) = %v, want nil", tc.name, tc.host, err)
		case tc.want != "" && (!errors.As(err, &re) || re.Reason != tc.want || re.Host != tc.host):
			t.Errorf("%s policy: checkHost(%q) = %v, want RefusedError{Host: %q, Reason: %q}", tc.name, tc.host, err, tc.host, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Policy
		field string // "" valid
	}{
		{"zero", Policy{}, ""},
		{"full", Policy{Allow: []string{"a.example.com", "*.b.example.com", "::1", "under_score.example"},
			AllowAddrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, MaxRedirects: -1}, ""},
		{"scheme in pattern", Policy{Allow: []string{"ok.example", "https://a.example.com"}}, "allow[1]"},
		{"port in pattern", Policy{Allow: []string{"a.example.com:443"}}, "allow[0]"},
		{"path in pattern", Policy{Allow: []string{"a.example.com/x"}}, "allow[0]"},
		{"any host", Policy{Allow: []string{"*"}}, ""},
		{"star with a port", Policy{Allow: []string{"*:443"}}, "allow[0]"},
		{"inner star", Policy{Allow: []string{"a.*.example.com"}}, "allow[0]"},
		{"empty pattern", Policy{Allow: []string{""}}, "allow[0]"},
		{"empty label", Policy{Allow: []string{"a..example.com"}}, "allow[0]"},
		{"hyphen label", Policy{Allow: []string{"-a.example.com"}}, "allow[0]"},
		{"long name", Policy{Allow: []string{strings.Repeat("a.", 127) + "com"}}, "allow[0]"},
		{"long label", Policy{Allow: []string{strings.Repeat("a", 64) + ".com"}}, "allow[0]"},
		{"zero prefix", Policy{AllowAddrs: []netip.Prefix{{}}}, "allow_addrs[0]"},
		{"mapped prefix", Policy{AllowAddrs: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.1/128")}}, "allow_addrs[0]"},
		{"redirects low", Policy{MaxRedirects: -2}, "max_redirects"},
		{"redirects high", Policy{MaxRedirects: MaxRedirectsLimit + 1}, "max_redirects"},
		{"dial timeout", Policy{DialTimeout: -1}, "dial_timeout"},
		{"tls timeout", Policy{TLSHandshakeTimeout: -1}, "tls_handshake_timeout"},
		{"header timeout", Policy{ResponseHeaderTimeout: -1}, "response_header_timeout"},
		{"timeout", Policy{Timeout: -1}, "timeout"},
	} {
		err := tc.p.Validate()
		var ve *sortie.ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("Validate(%s) = %v, want nil", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("Validate(%s) = %v, want a ValidationError for field %q", tc.name, err, tc.field)
		}
		if tc.field != "" {
			if _, cerr := tc.p.Client(); !errors.Is(cerr, sortie.ErrInvalidArgument) {
				t.Errorf("Client(%s) = %v, want ErrInvalidArgument", tc.name, cerr)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	p := Policy{Allow: []string{AnyHost}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	var zero Policy
	if err := zero.Check("https://example.com/hook"); !errors.Is(err, ErrRefused) {
		t.Errorf("zero Policy: Check(https://example.com/hook) = %v, want ErrRefused", err)
	}
	for _, tc := range []struct{ url, want string }{
		{"https://127.0.0.1:8443/hook", ""},
		{"https://example.com/hook", ""},
		{"https://[::1]/hook?sig=abc", "destination: ::1 refused: address ::1 is loopback"},
		{"ftp://example.com/x", `destination: example.com refused: scheme "ftp" is not allowed`},
		{"https:///path-only", "destination: refused: the URL has no host"},
		{"https://exa mple.com/%zz?secret=1", "destination: refused: not a valid URL"},
	} {
		got := ""
		if err := p.Check(tc.url); err != nil {
			got = err.Error()
			if !errors.Is(err, ErrRefused) {
				t.Errorf("Check(%q) = %v, want ErrRefused", tc.url, err)
			}
		}
		if got != tc.want {
			t.Errorf("Check(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
