package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sortie-run/sortie"
)

// Error codes of [ErrorDetail.Code], with the HTTP status they come with.
// Clients map them back to the sortie sentinels with [Sentinel]. The
// worker callbacks add codes of their own for the reasons of a 401 (see
// package server/callback).
const (
	// CodeInvalidArgument (400): the request breaks the schema or a limit;
	// the field names where. sortie.ErrInvalidArgument.
	CodeInvalidArgument = "invalid_argument"
	// CodePayloadTooLarge (413): the body is over the route's limit; the
	// field is "body". sortie.ErrInvalidArgument on the client.
	CodePayloadTooLarge = "payload_too_large"
	// CodeUnsupportedMediaType (415): a request body that is not
	// declared JSON (Content-Type application/json, parameters allowed);
	// the field is "body". sortie.ErrInvalidArgument on the client.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeNotFound (404): no such run, push configuration or route.
	// sortie.ErrNotFound.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed (405, with Allow): the route takes other
	// methods, which Allow lists.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeIdempotencyConflict (409): sortie.ErrIdempotencyConflict.
	CodeIdempotencyConflict = "idempotency_conflict"
	// CodeTerminal (409): sortie.ErrTerminal.
	CodeTerminal = "terminal"
	// CodeCancelRequested (409): sortie.ErrCancelRequested.
	CodeCancelRequested = "cancel_requested"
	// CodeConflict (409): sortie.ErrConflict.
	CodeConflict = "conflict"
	// CodeBudgetExhausted (409): the agent's budget for the period is
	// spent, so the submission was refused (sortie.ErrBudgetExhausted);
	// the message names the agent, the budget, the spend and when the
	// period ends. Not retried: the same submission is refused until then.
	CodeBudgetExhausted = "budget_exhausted"
	// CodeRefused (403): the host's policy refused what a handler asked
	// for (a model, a tool call, a connection); sortie.ErrRefused.
	CodeRefused = "refused"
	// CodeThrottled (429, with Retry-After): a backing service refused
	// the work for its rate (sortie.ErrThrottled); retry after the pause.
	// sortie.ErrThrottled on the client, which errors.Is also takes for
	// sortie.ErrUnavailable.
	CodeThrottled = "throttled"
	// CodeUnavailable (503, with Retry-After): the server is shutting down
	// (sortie.ErrClosed) or a backing service failed; retry.
	// sortie.ErrUnavailable on the client.
	CodeUnavailable = "unavailable"
	// CodePayloadIntegrity (500): a payload the run keeps by reference
	// cannot be read back: its object is missing, changed or not the
	// run's (sortie.ErrPayloadIntegrity). The message names the object's
	// key and SHA-256 (never a URL or a value). Not retried: the stored
	// data is at fault, not the request.
	CodePayloadIntegrity = "payload_integrity"
	// CodeUnauthenticated (401, or 403 for a non-loopback client of a host
	// without API tokens): no valid bearer token.
	CodeUnauthenticated = "unauthenticated"
	// CodeCancelled (499): the client went away before the answer.
	CodeCancelled = "cancelled"
	// CodeInternal (500): anything else; the server logs the cause and
	// shows none of it.
	CodeInternal = "internal"
)

// RetryAfterSeconds is the Retry-After of every 429 (throttled) and 503
// (unavailable) answer, in seconds: clients (server/httpengine, the
// sortie CLI) wait at least that long before trying again.
const RetryAfterSeconds = 1

// RetryAfter returns the Retry-After header value of an answer with
// status: [RetryAfterSeconds] for 429 and 503, "" for others.
func RetryAfter(status int) string {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		return strconv.Itoa(RetryAfterSeconds)
	}
	return ""
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code (the Code constants), a
// message for people, and for bad input the field (a JSON path such as
// "variables", "labels.team" or "events[0].seq").
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Mapping is one row of the table between the sortie sentinels and the
// wire: the sentinel, its code and HTTP status, and a message for people
// that names nothing of the request.
type Mapping struct {
	Err     error
	Code    string
	Status  int
	Message string
}

// mappings is the table, in the order [ForError] tests errors. A code's
// first row is the sentinel [Sentinel] returns: sortie.ErrClosed crosses
// the wire as "unavailable" and comes back as sortie.ErrUnavailable (the
// client retries elsewhere).
var mappings = []Mapping{
	{sortie.ErrInvalidArgument, CodeInvalidArgument, http.StatusBadRequest, "invalid argument"},
	{sortie.ErrNotFound, CodeNotFound, http.StatusNotFound, "not found"},
	{sortie.ErrIdempotencyConflict, CodeIdempotencyConflict, http.StatusConflict, "idempotency key reused with a different request"},
	{sortie.ErrTerminal, CodeTerminal, http.StatusConflict, "the run is terminal"},
	{sortie.ErrCancelRequested, CodeCancelRequested, http.StatusConflict, "the run's cancel was requested"},
	{sortie.ErrConflict, CodeConflict, http.StatusConflict, "the run changed meanwhile or is not in a state that allows this"},
	{sortie.ErrBudgetExhausted, CodeBudgetExhausted, http.StatusConflict, "the agent's budget for the period is spent"},
	{sortie.ErrRefused, CodeRefused, http.StatusForbidden, "refused by the host's policy"},
	{sortie.ErrPayloadIntegrity, CodePayloadIntegrity, http.StatusInternalServerError, "a payload the run keeps by reference cannot be read back"},
	{sortie.ErrThrottled, CodeThrottled, http.StatusTooManyRequests, "a backing service is throttling requests; retry after the pause"},
	{sortie.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable, "a backing service is unavailable; retry"},
	{sortie.ErrClosed, CodeUnavailable, http.StatusServiceUnavailable, "the server is shutting down"},
}

// ForError returns the row of the first sortie sentinel err wraps
// (errors.Is, in the order of the sentinels' codes above), and false when
// it wraps none.
func ForError(err error) (Mapping, bool) {
	for _, m := range mappings {
		if errors.Is(err, m.Err) {
			return m, true
		}
	}
	return Mapping{}, false
}

// Sentinel returns the sortie sentinel an error answer stands for, nil
// when none does. A known code decides: "payload_too_large" is
// sortie.ErrInvalidArgument, "unavailable" sortie.ErrUnavailable, and
// codes without a sentinel ("internal", "unauthenticated", ...) give nil.
// An unknown code (a newer server's, a proxy's page, no body) falls back
// on the status: 400, 413 and 422 are sortie.ErrInvalidArgument, 404
// sortie.ErrNotFound, 409 sortie.ErrConflict, 429 sortie.ErrThrottled,
// 502, 503 and 504 sortie.ErrUnavailable, anything else nil.
func Sentinel(status int, code string) error {
	switch code {
	case CodePayloadTooLarge, CodeUnsupportedMediaType:
		return sortie.ErrInvalidArgument
	case CodeMethodNotAllowed, CodeUnauthenticated, CodeCancelled, CodeInternal:
		return nil
	}
	for _, m := range mappings {
		if m.Code == code {
			return m.Err
		}
	}
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return sortie.ErrInvalidArgument
	case http.StatusNotFound:
		return sortie.ErrNotFound
	case http.StatusConflict:
		return sortie.ErrConflict
	case http.StatusTooManyRequests:
		return sortie.ErrThrottled
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return sortie.ErrUnavailable
	}
	return nil
}

// Err returns the error an answer with status and detail d stands for:
// for bad input (a [Sentinel] of sortie.ErrInvalidArgument) a
// [*sortie.ValidationError] with d's field ("body" when it names none) and
// d's message as the reason; else the sentinel, nil when there is none.
// Callers wrap it with what they called.
func Err(status int, d ErrorDetail) error {
	s := Sentinel(status, d.Code)
	if s != sortie.ErrInvalidArgument {
		return s
	}
	field := d.Field
	if field == "" {
		field = "body"
	}
	return &sortie.ValidationError{Field: field, Reason: d.Message}
}

// DecodeError reads the error body b of an answer. ok is false when b is
// not an error body with a code (an empty body, a proxy's page). Fields
// beyond those of [ErrorDetail] are ignored, so a newer server may add
// some.
func DecodeError(b []byte) (d ErrorDetail, ok bool) {
	var body ErrorBody
	if err := json.Unmarshal(b, &body); err != nil || body.Error.Code == "" {
		return ErrorDetail{}, false
	}
	return body.Error, true
}
