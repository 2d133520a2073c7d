package ui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/sortie-run/sortie/internal/loopback"
	"github.com/sortie-run/sortie/wire"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is the policy of every answer of the UI: scripts,
// styles, images and connections from the UI's own origin only; no inline
// script or style, no eval, no plugins, no frames (neither in the page nor
// of it), forms posting to the origin only.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// CSRFHeader is the request header carrying the session's CSRF token on
// every state-changing call.
const CSRFHeader = "X-CSRF-Token"

// Error codes of the UI's own refusals ([wire.ErrorBody]).
const (
	// CodeCSRF (403): a state-changing call without the session's CSRF
	// token, or from another origin.
	CodeCSRF = "csrf"
	// CodeNoSession (401): no session, or an expired one; log in again.
	CodeNoSession = "no_session"
)

// Options configures a [Handler]. A nil *Options is the defaults.
type Options struct {
	// LoopbackOnly serves loopback clients only (internal/loopback.Request),
	// as the API does on a host without API tokens. Optional; defaults to
	// false.
	LoopbackOnly bool
	// SessionTTL is how long a session lasts from login. Optional;
	// defaults to 12 h.
	SessionTTL time.Duration
	// MaxSessions is the most live sessions kept; a login beyond it ends
	// the oldest. Optional; defaults to 1000.
	MaxSessions int
	// Logger receives refusals (never a token, cookie or body). Optional;
	// defaults to slog.Default().
	Logger *slog.Logger
}

// Handler serves the UI and forwards its API calls; see the package
// documentation for its routes.
type Handler struct {
	api      http.Handler
	opts     Options
	log      *slog.Logger
	sessions *sessions
	mux      *http.ServeMux
}

// New returns the UI over api, the host's HTTP API handler (package
// server's routes), to which it forwards /api/v1/runs... with the
// session's bearer token.
func New(api http.Handler, opts *Options) *Handler {
	h := &Handler{api: api}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.SessionTTL <= 0 {
		h.opts.SessionTTL = 12 * time.Hour
	}
	if h.opts.MaxSessions <= 0 {
		h.opts.MaxSessions = 1000
	}
	if h.log = h.opts.Logger; h.log == nil {
		h.log = slog.Default()
	}
	h.sessions = newSessions(h.opts.SessionTTL, h.opts.MaxSessions)
	h.mux = h.routes()
	return h
}

func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // the directory is embedded above
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /session", h.getSession)
	mux.HandleFunc("POST /session", h.login)
	mux.HandleFunc("DELETE /session", h.logout)
	mux.HandleFunc("/api/", h.forward)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, wire.CodeNotFound, "no UI route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// ServeHTTP implements http.Handler: the security headers on every
// answer, the loopback rule, then the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if h.opts.LoopbackOnly && !loopback.Request(r) {
		writeError(w, http.StatusForbidden, wire.CodeUnauthenticated,
			"a host without API tokens serves loopback clients only (Host and Origin must be loopback)")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// writeError answers a [wire.ErrorBody].
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
