package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sortie-run/sortie"
)

// Error codes of the API's error body, {"error": {"code", "message",
// "field"}}. Clients map them back to the sortie sentinels.
const (
	CodeInvalidArgument     = "invalid_argument"
	CodeTooLarge            = "payload_too_large"
	CodeNotFound            = "not_found"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeConflict            = "conflict"
	CodeTerminal            = "terminal"
	CodeCancelRequested     = "cancel_requested"
	CodeUnavailable         = "unavailable"
	CodeUnauthenticated     = "unauthenticated"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodeInternal            = "internal"
)

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code, a message for people,
// and for bad input the field ("variables", "labels.team").
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// sentinelCodes maps the sortie sentinels to status and code, in the
// order they are tested.
var sentinelCodes = []struct {
	err    error
	status int
	code   string
	msg    string
}{
	{sortie.ErrNotFound, http.StatusNotFound, CodeNotFound, "not found"},
	{sortie.ErrIdempotencyConflict, http.StatusConflict, CodeIdempotencyConflict, "idempotency key reused with a different request"},
	{sortie.ErrTerminal, http.StatusConflict, CodeTerminal, "the run is terminal"},
	{sortie.ErrCancelRequested, http.StatusConflict, CodeCancelRequested, "the run's cancel was requested"},
	{sortie.ErrConflict, http.StatusConflict, CodeConflict, "the run changed meanwhile or is not in a state that allows this"},
	{sortie.ErrClosed, http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down"},
	{sortie.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable, "a backing service is unavailable; retry"},
}

// writeError answers err as JSON. Internal errors are logged, and the
// client gets no detail of them (they may name backends or paths).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorBody(r, err)
	writeJSON(w, status, body)
}

func (s *Server) errorBody(r *http.Request, err error) (int, ErrorBody) {
	var be *bodyError
	if errors.As(err, &be) {
		code := CodeInvalidArgument
		if be.status == http.StatusRequestEntityTooLarge {
			code = CodeTooLarge
		}
		return be.status, ErrorBody{ErrorDetail{Code: code, Message: be.msg, Field: "body"}}
	}
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return http.StatusBadRequest, ErrorBody{ErrorDetail{Code: CodeInvalidArgument, Message: ve.Reason, Field: ve.Field}}
	}
	for _, c := range sentinelCodes {
		if errors.Is(err, c.err) {
			return c.status, ErrorBody{ErrorDetail{Code: c.code, Message: notFoundMessage(r, c.code, c.msg)}}
		}
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return 499, ErrorBody{ErrorDetail{Code: "cancelled", Message: "request cancelled"}}
	}
	s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return http.StatusInternalServerError, ErrorBody{ErrorDetail{Code: CodeInternal, Message: "internal error; see the server log"}}
}

// notFoundMessage names what was not found from the request's path.
func notFoundMessage(r *http.Request, code, msg string) string {
	if code != CodeNotFound {
		return msg
	}
	id, cid := r.PathValue("id"), r.PathValue("cid")
	switch {
	case cid != "" && r.Method != http.MethodPut:
		return fmt.Sprintf("push configuration %.64q of run %.40s not found", cid, id)
	case id != "":
		return fmt.Sprintf("run %.40s not found", id)
	}
	return msg
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
