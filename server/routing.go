package server

import (
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// singleHeaders are the request headers given at most once: a second
// one (Authorization: a valid token then a wrong one, or the reverse)
// means something other to each reader, where Go's Header.Get reads the
// first.
var singleHeaders = []string{"Authorization", "Content-Type", "Last-Event-ID", wire.IdempotencyKeyHeader}

// checkSingleHeaders returns a [*sortie.ValidationError] naming the
// first of singleHeaders that h holds more than once, or nil.
func checkSingleHeaders(h http.Header) error {
	for _, name := range singleHeaders {
		if n := len(h.Values(name)); n > 1 {
			return sortie.Invalidf(name, "header given %d times; send it once", n)
		}
	}
	return nil
}

// onceHeaders answers a request that gives one of singleHeaders more
// than once 400 naming it, before anything else (authentication
// included) reads the request.
func (s *Server) onceHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkSingleHeaders(r.Header); err != nil {
			s.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// probeMethods are the methods a route may take, in the order an Allow
// header lists them.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// canonicalPaths answers a path with "." or ".." segments, escaped or
// not ("%2e%2e"), or an empty segment ("//") 400 in the API's error
// shape, where mux would redirect to the cleaned path with an HTML body
// (or take an escaped ".." as a segment's value); other requests go to
// mux.
func canonicalPaths(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); r.Method != http.MethodConnect && (p != cleanPath(p) || dotSegment(r.URL.Path)) {
			writeJSON(w, http.StatusBadRequest, errorBody(wire.CodeInvalidArgument,
				fmt.Sprintf("path %.200q is not canonical: no '.', '..' or empty segments", p), "path"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// dotSegment reports whether the decoded path p has a "." or ".."
// segment (one that was escaped, as the escaped path's check lets by).
func dotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// cleanPath is p as http.ServeMux matches it: "." and ".." resolved,
// empty segments removed, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// noRoute answers a request no route of mux takes: 405 with Allow (in
// the API's error shape) when the path has routes for other methods,
// else 404. fallback is the pattern noRoute is registered as.
func noRoute(mux *http.ServeMux, fallback string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r, fallback); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, errorBody(wire.CodeMethodNotAllowed,
				fmt.Sprintf("%.20s is not allowed on %.200s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")), ""))
			return
		}
		writeJSON(w, http.StatusNotFound, errorBody(wire.CodeNotFound, fmt.Sprintf("no route %.20s %.200s", r.Method, r.URL.Path), ""))
	}
}

// allowedMethods lists the methods of probeMethods that a route of mux
// other than fallback takes for r's path.
func allowedMethods(mux *http.ServeMux, r *http.Request, fallback string) []string {
	var allow []string
	for _, m := range probeMethods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != fallback {
			allow = append(allow, m)
		}
	}
	return allow
}
