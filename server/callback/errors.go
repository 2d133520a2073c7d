package callback

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// The codes of a 401, beyond those of package wire (which every other
// refusal takes: "not_found", "method_not_allowed", "payload_too_large",
// "invalid_argument", "conflict", "cancel_requested", "terminal",
// "unavailable", "internal"); see [wire.ErrorBody].
const (
	CodeMissingCreds    = "missing_credentials" // no Sortie-Attempt header
	CodeMalformedClaims = "malformed_claims"    // the header does not parse as claims
	CodeUnknownKey      = "unknown_key"         // the claims' key ID is not in the keyring
	CodeTokenExpired    = "token_expired"       // the claims' expiry passed
	CodeMissingHeader   = "missing_header"      // a webhook-* header is absent or malformed
	CodeTimestamp       = "timestamp"           // webhook-timestamp outside the tolerance
	CodeBadSignature    = "bad_signature"       // no signature by this attempt's secret
	CodeReplayed        = "replayed"            // this webhook-id was accepted before
)

type apiError struct {
	status               int
	code, message, field string
}

func unauthorized(code, msg string) *apiError {
	return &apiError{http.StatusUnauthorized, code, msg, ""}
}

// invalid turns a validation error into a 400 naming its field.
func invalid(err error) *apiError {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return &apiError{http.StatusBadRequest, wire.CodeInvalidArgument, ve.Error(), ve.Field}
	}
	return &apiError{http.StatusBadRequest, wire.CodeInvalidArgument, err.Error(), ""}
}

// cpError maps a route's error (a validation error of the body, or the
// control plane's) to a response by the sentinel it wraps
// ([wire.ForError]); a context that ended is "unavailable" too (the worker
// retries). Unexpected errors are logged and shown as "internal" without
// their text.
func (h *Handler) cpError(r *http.Request, c *Claims, err error) *apiError {
	m, ok := wire.ForError(err)
	if !ok && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		m, ok = wire.ForError(sortie.ErrUnavailable)
	}
	switch {
	case ok && m.Err == sortie.ErrInvalidArgument:
		return invalid(err)
	case ok && m.Code == wire.CodeUnavailable:
		return &apiError{m.Status, m.Code, "the control plane is unavailable; retry", ""}
	case ok:
		return &apiError{m.Status, m.Code, err.Error(), ""}
	}
	h.log.Error("callback: control plane call failed", "path", r.URL.Path, "run", string(c.RunID), "attempt", c.Attempt, "err", err)
	return &apiError{http.StatusInternalServerError, wire.CodeInternal, "the control plane call failed", ""}
}

// refuse writes e and logs it, with what the claims say when they parsed.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, c *Claims, e *apiError) {
	attrs := []any{"path", r.URL.Path, "method", r.Method, "status", e.status, "code", e.code, "remote", r.RemoteAddr}
	if c != nil { // what the claims say; verified unless the refusal is a 401
		attrs = append(attrs, "run", string(c.RunID), "attempt", c.Attempt, "key_id", c.KeyID,
			"claims_verified", e.status != http.StatusUnauthorized)
	}
	level := slog.LevelInfo
	if e.status == http.StatusUnauthorized {
		level = slog.LevelWarn
	}
	h.log.Log(r.Context(), level, "callback refused", attrs...)
	if ra := wire.RetryAfter(e.status); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	writeJSON(w, e.status, wire.ErrorBody{Error: wire.ErrorDetail{Code: e.code, Message: e.message, Field: e.field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.CodeInternal, Message: "encode response"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
