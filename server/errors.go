package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// writeError answers err as a [wire.ErrorBody]. Internal errors are
// logged, and the client gets no detail of them (they may name backends
// or paths); other 500 answers (payload_integrity) are logged with their
// cause too.
//
// Throttling (429) and unavailability (503) answers carry Retry-After
// and are counted (see [MetricThrottled]).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorBody(r, err)
	if ra := wire.RetryAfter(status); ra != "" {
		w.Header().Set("Retry-After", ra)
		countRefusal(r, status)
	}
	writeJSON(w, status, body)
}

func (s *Server) errorBody(r *http.Request, err error) (int, wire.ErrorBody) {
	var be *bodyError
	if errors.As(err, &be) {
		code := wire.CodeInvalidArgument
		switch be.status {
		case http.StatusRequestEntityTooLarge:
			code = wire.CodePayloadTooLarge
		case http.StatusUnsupportedMediaType:
			code = wire.CodeUnsupportedMediaType
		}
		return be.status, errorBody(code, be.msg, cmp.Or(be.field, "body"))
	}
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return http.StatusBadRequest, errorBody(wire.CodeInvalidArgument, ve.Reason, ve.Field)
	}
	var abe *sortie.AgentBudgetError
	if errors.As(err, &abe) {
		return http.StatusConflict, errorBody(wire.CodeBudgetExhausted, abe.Error(), "agent")
	}
	if msg, ok := stateConflict(err); ok {
		return http.StatusConflict, errorBody(wire.CodeConflict, msg, "")
	}
	if m, ok := wire.ForError(err); ok {
		if m.Status == http.StatusInternalServerError { // e.g. payload_integrity: the operator needs the cause too
			s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "code", m.Code, "err", err)
		}
		return m.Status, errorBody(m.Code, message(r, m, err), "")
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return 499, errorBody(wire.CodeCancelled, "request cancelled", "")
	}
	s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return http.StatusInternalServerError, internalError
}

// stateConflict is the message of a refusal that names the run's state
// (deleting a live run, resuming one that is not interrupted): it holds
// the run's ID and state, nothing of a backend.
func stateConflict(err error) (string, bool) {
	var live *sortie.LiveRunError
	if errors.As(err, &live) {
		return live.Error(), true
	}
	var idle *sortie.NotInterruptedError
	if errors.As(err, &idle) {
		return idle.Error(), true
	}
	return "", false
}

// internalError is the body of a 500: nothing of the cause.
var internalError = errorBody(wire.CodeInternal, "internal error; see the server log", "")

func errorBody(code, msg, field string) wire.ErrorBody {
	return wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: msg, Field: field}}
}

// message is the message of an answer of row m for err: what was not
// found, named from the request's path; the error itself for a payload's
// integrity (it names the object's key and SHA-256, never a URL or a
// value); a terminal run's ID, state and the refused change; else m's
// message, nothing of the cause.
func message(r *http.Request, m wire.Mapping, err error) string {
	var te *sortie.TerminalError
	switch {
	case m.Code == wire.CodeNotFound:
		return notFoundMessage(r, m.Message)
	case m.Code == wire.CodeTerminal && errors.As(err, &te):
		return te.Error()
	case m.Code == wire.CodePayloadIntegrity:
		return err.Error()
	}
	return m.Message
}

// notFoundMessage names what was not found from the request's path.
func notFoundMessage(r *http.Request, msg string) string {
	id, cid, agent := r.PathValue("id"), r.PathValue("cid"), r.PathValue("name")
	switch {
	case agent != "":
		return fmt.Sprintf("no agent named %.64q on this host", agent)
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
