package httpengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server"
)

// ErrUnauthenticated: the host refused the API token (HTTP 401).
var ErrUnauthenticated = errors.New("unauthenticated")

// HostError is an error answer of the host: its HTTP status and error
// body. It unwraps to the sortie sentinel of its code, if any.
type HostError struct {
	Status int
	Detail server.ErrorDetail
	err    error
}

func (e *HostError) Error() string {
	return fmt.Sprintf("host answered %d %s: %s", e.Status, e.Detail.Code, e.Detail.Message)
}

// Unwrap returns the sentinel of the error code.
func (e *HostError) Unwrap() error { return e.err }

var codeErrors = map[string]error{
	server.CodeNotFound:            sortie.ErrNotFound,
	server.CodeIdempotencyConflict: sortie.ErrIdempotencyConflict,
	server.CodeConflict:            sortie.ErrConflict,
	server.CodeTerminal:            sortie.ErrTerminal,
	server.CodeCancelRequested:     sortie.ErrCancelRequested,
	server.CodeUnavailable:         sortie.ErrUnavailable,
	server.CodeUnauthenticated:     ErrUnauthenticated,
}

// decodeError turns an error response into an error: a
// [*sortie.ValidationError] for bad input, else a [*HostError].
func decodeError(resp *http.Response) error {
	var body server.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := json.Unmarshal(b, &body); err != nil || body.Error.Code == "" {
		body.Error = server.ErrorDetail{Code: http.StatusText(resp.StatusCode), Message: "no error body"}
	}
	return detailError(resp.StatusCode, body.Error)
}

func detailError(status int, d server.ErrorDetail) error {
	switch d.Code {
	case server.CodeInvalidArgument, server.CodeTooLarge:
		field := d.Field
		if field == "" {
			field = "request"
		}
		return &sortie.ValidationError{Field: field, Reason: d.Message}
	}
	he := &HostError{Status: status, Detail: d, err: codeErrors[d.Code]}
	if he.err == nil && status == http.StatusUnauthorized {
		he.err = ErrUnauthenticated
	}
	return he
}
