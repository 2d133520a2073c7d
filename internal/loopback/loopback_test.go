package loopback_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sortie-run/sortie/internal/loopback"
)

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST", true},
		{"LocalHost:7780", true},
		{"127.0.0.1", true},
		{"127.0.0.1:7780", true},
		{"127.1.2.3", true},
		{"127.255.255.254:80", true},
		{"::1", true},
		{"[::1]", true},
		{"[::1]:7780", true},
		{"::ffff:127.0.0.1", true},
		{"[::ffff:127.0.0.1]:7780", true},
		{"::ffff:7f00:1", true},
		{"", false},
		{":7780", false},
		{"0.0.0.0:7780", false},
		{"[::]:7780", false},
		{"10.0.0.1", false},
		{"128.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::2", false},
		{"example.com", false},
		{"localhost.example.com", false},
		{"notlocalhost", false},
		{"127.0.0.1.nip.io", false},
		{"[::1", false},
	} {
		if got := loopback.Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://localhost:7780", true},
		{"http://LOCALHOST", true},
		{"https://127.0.0.1:8443/cb", true},
		{"http://[::1]:7780", true},
		{"http://[::ffff:127.0.0.1]:7780", true},
		{"http://example.com", false},
		{"http://10.1.2.3:7780", false},
		{"http://0.0.0.0:7780", false},
		{"localhost:7780", false}, // no scheme: "localhost" parses as the scheme
		{"/relative", false},
		{"http://%zz", false},
		{"", false},
	} {
		if got := loopback.URL(tc.url); got != tc.want {
			t.Errorf("URL(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		host, origin string
		want         bool
	}{
		{"127.0.0.1:7780", "", true},
		{"localhost:7780", "http://localhost:7780", true},
		{"127.0.0.1:7780", "http://127.0.0.1:9999", true},
		{"evil.example:7780", "", false},                  // DNS rebinding
		{"127.0.0.1:7780", "https://evil.example", false}, // cross-site page
		{"127.0.0.1:7780", "null", false},                 // opaque origin (sandboxed frame, file:)
		{"evil.example", "http://evil.example", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := loopback.Request(r); got != tc.want {
			t.Errorf("Request(Host %q, Origin %q) = %v, want %v", tc.host, tc.origin, got, tc.want)
		}
	}
}
