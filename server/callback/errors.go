package callback

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/sortie-run/sortie"
)

// Error codes of the handler's JSON errors; see [ErrorBody].
const (
	CodeNotFound         = "not_found"           // 404: no such route, or no such run
	CodeMethodNotAllowed = "method_not_allowed"  // 405
	CodeTooLarge         = "too_large"           // 413: the body is over the route's limit
	CodeInvalidArgument  = "invalid_argument"    // 400: the body breaks the schema or a limit; field names it
	CodeConflict         = "conflict"            // 409: sortie.ErrConflict (the claim is not the live one, a seq is taken)
	CodeCancelRequested  = "cancel_requested"    // 409: sortie.ErrCancelRequested
	CodeTerminal         = "terminal"            // 409: sortie.ErrTerminal
	CodeUnavailable      = "unavailable"         // 503: the control plane is unavailable; retry
	CodeInternal         = "internal"            // 500
	CodeMissingCreds     = "missing_credentials" // 401: no Sortie-Attempt header
	CodeMalformedClaims  = "malformed_claims"    // 401
	CodeUnknownKey       = "unknown_key"         // 401: the claims' key ID is not in the keyring
	CodeTokenExpired     = "token_expired"       // 401
	CodeMissingHeader    = "missing_header"      // 401: a webhook-* header is absent or malformed
	CodeTimestamp        = "timestamp"           // 401: webhook-timestamp outside the tolerance
	CodeBadSignature     = "bad_signature"       // 401: no signature by this attempt's secret
	CodeReplayed         = "replayed"            // 401: this webhook-id was accepted before
)

// ErrorBody is the JSON body of every refusal.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says why a request was refused: a code from the Code
// constants, a message, and for 400s the field (a path such as
// "events[0].seq").
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

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
		return &apiError{http.StatusBadRequest, CodeInvalidArgument, ve.Error(), ve.Field}
	}
	return &apiError{http.StatusBadRequest, CodeInvalidArgument, err.Error(), ""}
}

// cpError maps a route's error (a validation error of the body, or the
// control plane's) to a response; unexpected errors are logged and shown
// as "internal" without their text.
func (h *Handler) cpError(r *http.Request, c *Claims, err error) *apiError {
	switch {
	case errors.Is(err, sortie.ErrInvalidArgument):
		return invalid(err)
	case errors.Is(err, sortie.ErrCancelRequested):
		return &apiError{http.StatusConflict, CodeCancelRequested, err.Error(), ""}
	case errors.Is(err, sortie.ErrTerminal):
		return &apiError{http.StatusConflict, CodeTerminal, err.Error(), ""}
	case errors.Is(err, sortie.ErrConflict):
		return &apiError{http.StatusConflict, CodeConflict, err.Error(), ""}
	case errors.Is(err, sortie.ErrNotFound):
		return &apiError{http.StatusNotFound, CodeNotFound, err.Error(), ""}
	case errors.Is(err, sortie.ErrUnavailable), errors.Is(err, sortie.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusServiceUnavailable, CodeUnavailable, "the control plane is unavailable; retry", ""}
	}
	h.log.Error("callback: control plane call failed", "path", r.URL.Path, "run", string(c.RunID), "attempt", c.Attempt, "err", err)
	return &apiError{http.StatusInternalServerError, CodeInternal, "the control plane call failed", ""}
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
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, ErrorBody{Error: ErrorDetail{Code: e.code, Message: e.message, Field: e.field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
