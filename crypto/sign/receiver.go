package sign

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/sortie-run/sortie"
)

// Forgetter is an optional [ReplayCache] capability: forgetting the ID of
// a message that was accepted but whose processing failed, so that the
// sender's redelivery (same webhook-id) is accepted and processed again.
// [MemoryReplayCache] has it.
type Forgetter interface {
	Forget(ctx context.Context, id string) error
}

// StatusOf is the HTTP status a webhook receiver answers for an error of
// [Verifier.Verify] or [Verifier.VerifyRequest]: 0 for nil (the receiver
// processes the message and answers itself), 200 for [ErrReplay] (the
// message was already accepted: a sender's redelivery after a lost
// answer, to be acknowledged, not processed again), 503 for
// [ErrReplayCache] (the sender sends it again), 413 for a body over the
// limit, and 401 for every other failure.
func StatusOf(err error) int {
	var ve *sortie.ValidationError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrReplay):
		return http.StatusOK
	case errors.Is(err, ErrReplayCache):
		return http.StatusServiceUnavailable
	case errors.As(err, &ve):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnauthorized
}

// Middleware returns a webhook receiver: it verifies each request (a body
// of at most maxBytes) and passes the verified ones to next, with the
// body readable again from r.Body. Refusals are answered per [StatusOf]
// without calling next; a replay of an accepted webhook-id is answered
// 200 "already processed". When next answers a status outside 2xx and the
// verifier's replay cache is a [Forgetter], the ID is forgotten, so the
// sender's redelivery is processed rather than acknowledged unprocessed.
// (A redelivery that arrives while the first request is still being
// processed is acknowledged: a sender redelivers only after the first
// attempt failed or timed out, so keep next faster than its timeout.)
func (v *Verifier) Middleware(maxBytes int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := v.VerifyRequest(r, maxBytes)
		if err != nil {
			status := StatusOf(err)
			if status == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "1")
			}
			msg := "webhook refused"
			if status == http.StatusOK {
				msg = "already processed"
			}
			http.Error(w, msg, status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if f, ok := v.replay.(Forgetter); ok && (sw.status < 200 || sw.status > 299) {
				_ = f.Forget(context.WithoutCancel(r.Context()), r.Header.Get(HeaderID))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status next answered (200 when it wrote no
// header).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
