package host_test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"testing"

	"github.com/sortie-run/sortie/server/callback"
)

// proxy is an HTTP proxy on a loopback port that stays put while the host
// behind it is restarted on another port or cut off: the workers'
// callback URL. A cut request has its connection closed unanswered, as a
// network partition or a host that is down would.
type proxy struct {
	ln net.Listener

	mu       sync.Mutex
	upstream string // "" while the host is unreachable
	cutOff   int    // the attempt number whose callbacks are cut; 0 for none
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	p := &proxy{ln: listen(t)}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = "http", p.state(nil)
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.state(r) == "" {
			drop(w)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(p.ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

// drop closes the request's connection without an answer.
func drop(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
	}
}

// state returns the upstream for r: "" when the host is unreachable or
// r (when given) is a callback of the attempt cut off.
func (p *proxy) state(r *http.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r != nil && p.cutOff != 0 {
		if c, err := callback.ParseClaims(r.Header.Get(callback.HeaderAttempt)); err == nil && c.Attempt == p.cutOff {
			return ""
		}
	}
	return p.upstream
}

func (p *proxy) url() string { return "http://" + p.ln.Addr().String() }

// to sends requests to addr (a restarted host), or nowhere ("").
func (p *proxy) to(addr string) {
	p.mu.Lock()
	p.upstream = addr
	p.mu.Unlock()
}

// cut cuts off the callbacks of attempt n (of every run): the workers of
// the other attempts still reach the host.
func (p *proxy) cut(n int) {
	p.mu.Lock()
	p.cutOff = n
	p.mu.Unlock()
}
