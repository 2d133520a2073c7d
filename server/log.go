package server

import (
	"log/slog"
	"net/http"
	"time"
)

// recorder keeps the status of a response; Unwrap lets
// http.ResponseController reach the connection (flushes of SSE streams).
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush implements http.Flusher for handlers that test for it (SSE
// writers of other libraries).
func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// logRequests logs one line per request: method, route pattern, status
// duration in ms and the remote address. It never logs headers, query or body (they may
// carry tokens or secrets).
func (s *Server) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "route", r.Pattern, "panic", v)
				if rec.status == 0 {
					writeJSON(rec, http.StatusInternalServerError, internalError)
				}
			}
			level := slog.LevelInfo
			if rec.status >= 500 {
				level = slog.LevelError
			}
			s.log.Log(r.Context(), level, "request", "method", r.Method, "route", r.Pattern,
				"status", rec.status, "duration_ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
		}()
		h.ServeHTTP(rec, r)
	})
}
