package httpengine

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// ErrUnauthenticated: the host refused the API token (HTTP 401, or code
// "unauthenticated").
var ErrUnauthenticated = errors.New("unauthenticated")

// HostError is an error answer of the host: its HTTP status and error
// body. It unwraps to the sortie sentinel of its code ([wire.Sentinel]),
// or to [ErrUnauthenticated].
type HostError struct {
	Status int
	Detail wire.ErrorDetail
	// RetryAfter is the answer's Retry-After (delay-seconds or an
	// HTTP-date), 0 when it has none: how long the host asks a client to
	// wait before trying again (429 throttled, 503 unavailable).
	RetryAfter time.Duration
	err        error
}

func (e *HostError) Error() string {
	return fmt.Sprintf("host answered %d %s: %s", e.Status, e.Detail.Code, e.Detail.Message)
}

// Unwrap returns the sentinel of the error code.
func (e *HostError) Unwrap() error { return e.err }

// decodeError turns an error response into an error: a
// [*sortie.ValidationError] for bad input, else a [*HostError].
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	d, ok := wire.DecodeError(b)
	if !ok {
		d = wire.ErrorDetail{Code: http.StatusText(resp.StatusCode), Message: "no error body"}
	}
	err := detailError(resp.StatusCode, d)
	var he *HostError
	if errors.As(err, &he) {
		he.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return err
}

// maxRetryAfter caps the wait a Retry-After can ask for.
const maxRetryAfter = time.Minute

// retryAfter reads a Retry-After header (RFC 9110: delay-seconds or an
// HTTP-date) as a duration from now, at most a minute; 0 when absent or
// unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return min(time.Duration(max(s, 0))*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

func detailError(status int, d wire.ErrorDetail) error {
	err := wire.Err(status, d)
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	if err == nil && (d.Code == wire.CodeUnauthenticated || status == http.StatusUnauthorized) {
		err = ErrUnauthenticated
	}
	return &HostError{Status: status, Detail: d, err: err}
}
