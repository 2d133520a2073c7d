package ui

import (
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sortie-run/sortie/wire"
)

// apiRoot is the part of the API the UI may call: runs and what hangs off
// them. Worker callbacks, A2A and CloudEvents are not the UI's business.
const apiRoot = "/v1/runs"

// forward passes /api/v1/runs... to the API as the session's client: the
// session's bearer token instead of the cookie, after the CSRF check of a
// state-changing call. The API applies its own authentication, limits and
// schemas as to any client.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request) {
	sess := h.sessions.get(r, time.Now())
	if sess == nil {
		writeError(w, http.StatusUnauthorized, CodeNoSession, "no session or an expired one: log in again")
		return
	}
	if !safeMethod(r.Method) && !h.checkCSRF(w, r, sess) {
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/api")
	if p != apiRoot && (!strings.HasPrefix(p, apiRoot+"/") || path.Clean(p) != p) {
		writeError(w, http.StatusNotFound, wire.CodeNotFound, "the UI forwards "+apiRoot+" routes only")
		return
	}
	h.api.ServeHTTP(w, apiRequest(r, p, sess.token))
}

// apiRequest is r as the API sees it: path p, the session's token (none
// on a host without tokens) and neither the cookie nor the CSRF token.
func apiRequest(r *http.Request, p, token string) *http.Request {
	out := r.Clone(r.Context())
	out.URL.Path, out.URL.RawPath = p, ""
	out.RequestURI = ""
	out.Header.Del("Cookie")
	out.Header.Del(CSRFHeader)
	out.Header.Del("Authorization")
	if token != "" {
		out.Header.Set("Authorization", "Bearer "+token)
	}
	return out
}

// safeMethod reports whether m changes nothing (RFC 9110 §9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// probe asks the API whether token may list runs, as the login check:
// the status of GET /v1/runs?page_size=1 with r's Host and Origin (so the
// API's loopback rule applies as well).
func (h *Handler) probe(r *http.Request, token string) int {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, apiRoot+"?page_size=1", nil)
	if err != nil {
		return http.StatusInternalServerError
	}
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	if o := r.Header.Get("Origin"); o != "" {
		req.Header.Set("Origin", o)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	sw := &statusWriter{header: http.Header{}}
	h.api.ServeHTTP(sw, req)
	return sw.status
}

// statusWriter keeps a response's status and drops its body.
type statusWriter struct {
	header http.Header
	status int
}

func (s *statusWriter) Header() http.Header { return s.header }

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(b), nil
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
