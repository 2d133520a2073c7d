package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sortie-run/sortie/internal/jsonbody"
	"github.com/sortie-run/sortie/internal/strictjson"
	"github.com/sortie-run/sortie/wire"
)

// CookieName is the session cookie's name. Its value is a random session
// ID (32 bytes, base64url); the host keeps only its SHA-256.
const CookieName = "sortie_ui"

// maxLoginBytes bounds a login body.
const maxLoginBytes = 4 << 10

// session is one logged-in browser: the API token it uses (empty on a
// host without tokens) and its CSRF token.
type session struct {
	token   string
	csrf    string
	expires time.Time
}

// sessions are the live sessions by the SHA-256 of their ID.
type sessions struct {
	ttl time.Duration
	max int

	mu   sync.Mutex
	byID map[[sha256.Size]byte]*session
}

func newSessions(ttl time.Duration, maxN int) *sessions {
	return &sessions{ttl: ttl, max: maxN, byID: map[[sha256.Size]byte]*session{}}
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create stores a session for token and returns its ID, evicting expired
// sessions and, when still full, the one closest to expiry.
func (s *sessions) create(token string, now time.Time) (string, *session) {
	id := randomToken()
	sess := &session{token: token, csrf: randomToken(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.byID {
		if !now.Before(v.expires) {
			delete(s.byID, k)
		}
	}
	for len(s.byID) >= s.max {
		var oldest [sha256.Size]byte
		first := true
		for k, v := range s.byID {
			if first || v.expires.Before(s.byID[oldest].expires) {
				oldest, first = k, false
			}
		}
		delete(s.byID, oldest)
	}
	s.byID[sha256.Sum256([]byte(id))] = sess
	return id, sess
}

// get returns the live session of r's cookie, or nil.
func (s *sessions) get(r *http.Request, now time.Time) *session {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	key := sha256.Sum256([]byte(c.Value))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byID[key]
	if sess == nil || !now.Before(sess.expires) {
		delete(s.byID, key)
		return nil
	}
	return sess
}

// end removes the session of r's cookie.
func (s *sessions) end(r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		s.mu.Lock()
		delete(s.byID, sha256.Sum256([]byte(c.Value)))
		s.mu.Unlock()
	}
}

// sessionCookie is the cookie of session id; maxAge -1 deletes it. The
// Path is left to the browser's default, the directory of the session
// route (the UI's mount point, e.g. /ui), so the UIs of two hosts under
// one origin (examples/interactive-web) keep separate sessions. It is
// Secure over TLS, including TLS ended by a proxy that says so in
// X-Forwarded-Proto (a client that sends the header itself only makes its
// own cookie stricter).
func sessionCookie(r *http.Request, id string, maxAge int) *http.Cookie {
	secure := r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	return &http.Cookie{Name: CookieName, Value: id, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure}
}

// sessionInfo is the answer of GET and POST /session.
type sessionInfo struct {
	Authenticated bool   `json:"authenticated"`
	CSRFToken     string `json:"csrf_token,omitempty"`
}

// getSession tells the page whether it is logged in and, when it is, the
// CSRF token (readable by same-origin scripts only: the UI answers no
// CORS request).
func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	if sess := h.sessions.get(r, time.Now()); sess != nil {
		writeJSON(w, http.StatusOK, sessionInfo{Authenticated: true, CSRFToken: sess.csrf})
		return
	}
	writeJSON(w, http.StatusOK, sessionInfo{})
}

// login exchanges an API token (empty on a host without tokens) for a
// session, after the API itself accepted the token.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) || !isJSON(r) {
		h.refuseCSRF(w, r, "a login must be a same-origin JSON POST")
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLoginBytes))
	if err == nil {
		err = strictjson.Unmarshal(b, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, wire.CodeInvalidArgument, "body: want {\"token\": string} (once) of at most 4096 bytes")
		return
	}
	if status := h.probe(r, req.Token); status != http.StatusOK {
		h.log.Info("ui: login refused", "status", status, "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, wire.CodeUnauthenticated, "the API refused this token")
		return
	}
	id, sess := h.sessions.create(req.Token, time.Now())
	http.SetCookie(w, sessionCookie(r, id, int(h.opts.SessionTTL/time.Second)))
	writeJSON(w, http.StatusOK, sessionInfo{Authenticated: true, CSRFToken: sess.csrf})
}

// logout ends the session; it needs the CSRF token like any change.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if sess := h.sessions.get(r, time.Now()); sess == nil || !h.checkCSRF(w, r, sess) {
		if sess == nil {
			writeError(w, http.StatusUnauthorized, CodeNoSession, "no session")
		}
		return
	}
	h.sessions.end(r)
	http.SetCookie(w, sessionCookie(r, "", -1))
	w.WriteHeader(http.StatusNoContent)
}

// checkCSRF refuses (403, [CodeCSRF]) a request without the session's
// CSRF token or from another origin, and reports whether it passed.
func (h *Handler) checkCSRF(w http.ResponseWriter, r *http.Request, sess *session) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		h.refuseCSRF(w, r, "a state-changing call needs the session's "+CSRFHeader+" header")
		return false
	}
	if !sameOrigin(r) {
		h.refuseCSRF(w, r, "a state-changing call must come from the UI's own origin")
		return false
	}
	return true
}

func (h *Handler) refuseCSRF(w http.ResponseWriter, r *http.Request, msg string) {
	h.log.Warn("ui: refused a state-changing call", "method", r.Method, "path", r.URL.Path, "reason", msg, "remote", r.RemoteAddr)
	writeError(w, http.StatusForbidden, CodeCSRF, msg)
}

// sameOrigin reports whether the request comes from a page of this host,
// by the browser's Fetch Metadata (Sec-Fetch-Site, which every current
// browser sends and no proxy rewrites) or, from a browser without it, by
// its Origin against the Host. Either is a second line behind the CSRF
// token, which a page of another origin cannot read.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Host == r.Host
}

// isJSON reports whether r's body is declared JSON, which a cross-site
// form cannot send without a CORS preflight the UI never answers.
func isJSON(r *http.Request) bool {
	return jsonbody.IsJSON(r.Header.Get("Content-Type"))
}
