package a2a

import (
	"context"
	"errors"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
)

// fieldNames maps the fields of the engine's validation errors to the A2A
// request fields they come from.
var fieldNames = map[string]string{
	"variables":       "message.parts",
	"context_id":      "message.contextId",
	"idempotency_key": "message.messageId",
	"agent":           "message.metadata." + SkillKey,
	"run_id":          "id",
	"page_size":       "pageSize",
	"page_token":      "pageToken",
}

// invalid is an A2A invalid-params error naming field.
func invalid(field, format string, args ...any) error {
	return fromSortie(sortie.Invalidf(field, format, args...), nil)
}

// fromSortie turns an engine or control-plane error into the A2A error a
// client gets: bad input as invalid params naming the field (in the
// message and in the details, {"field": ...}), unknown runs as task not
// found, and anything else as an internal error whose cause is logged,
// not sent. A nil log logs nothing.
func fromSortie(err error, log *slog.Logger) error {
	var ve *sortie.ValidationError
	var ae *a2a.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &ve):
		field := ve.Field
		if f, ok := fieldNames[field]; ok {
			field = f
		}
		return a2a.NewError(a2a.ErrInvalidParams, (&sortie.ValidationError{Field: field, Reason: ve.Reason}).Error()).
			WithDetails(map[string]any{"field": field})
	case errors.Is(err, sortie.ErrNotFound):
		return a2a.NewError(a2a.ErrTaskNotFound, "task not found")
	case errors.Is(err, sortie.ErrIdempotencyConflict):
		return a2a.NewError(a2a.ErrInvalidParams, "invalid message.messageId: used before with a different message").
			WithDetails(map[string]any{"field": "message.messageId"})
	}
	if log != nil {
		log.Error("a2a: request failed", "err", err)
	}
	if errors.Is(err, sortie.ErrUnavailable) || errors.Is(err, sortie.ErrClosed) {
		return a2a.NewError(a2a.ErrInternalError, "the host is unavailable; retry later")
	}
	return a2a.NewError(a2a.ErrInternalError, "internal error")
}

// runID parses an A2A task ID (field names it) as a run ID: a malformed
// one is a task this host does not have.
func runID(field string, id a2a.TaskID) (sortie.RunID, error) {
	if id == "" {
		return "", invalid(field, "required")
	}
	r := sortie.RunID(id)
	if r.Validate() != nil {
		return "", a2a.NewError(a2a.ErrTaskNotFound, "task not found: "+field+" is not a task ID of this host").
			WithDetails(map[string]any{"field": field})
	}
	return r, nil
}
