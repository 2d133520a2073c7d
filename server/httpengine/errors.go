package httpengine

import (
	"errors"
	"fmt"
	"io"
	"net/http"

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
	err    error
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
	return detailError(resp.StatusCode, d)
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
