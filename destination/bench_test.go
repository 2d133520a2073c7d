package destination

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkClientGet compares a GET on loopback through the policy's client
// with a plain http.Client, on a kept-alive connection (the request check
// only) and on a new connection per request (the dial-time check too).
func BenchmarkClientGet(b *testing.B) {
	s := newServer(b, "127.0.0.1:0", false, nil).URL
	policy, err := (&Policy{Allow: anyHost, AllowAddrs: loopback4, AllowHTTP: true}).Client()
	if err != nil {
		b.Fatal(err)
	}
	plain := &http.Client{Transport: &http.Transport{}}
	for _, bc := range []struct {
		name    string
		c       *http.Client
		newConn bool
	}{
		{"policy/keepalive", policy, false},
		{"plain/keepalive", plain, false},
		{"policy/newconn", policy, true},
		{"plain/newconn", plain, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, s, nil)
				req.Close = bc.newConn
				resp, err := bc.c.Do(req)
				if err != nil {
					b.Fatalf("GET %s = %v", s, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
