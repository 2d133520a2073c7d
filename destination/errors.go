package destination

import (
	"errors"
	"fmt"
)

// ErrRefused is matched (errors.Is) by every refusal of a [Policy]: a
// scheme, host or address it does not allow, or too many redirects.
var ErrRefused = errors.New("destination refused")

// RefusedError says which destination a [Policy] refused and why. It names
// the host (a name or an address, without port, user information, path or
// query: those may carry secrets) and the reason, for example
// "address 127.0.0.1 is loopback". It matches [ErrRefused] with errors.Is.
//
// An [net/http.Client] wraps it in a *url.Error whose text carries the
// request's URL; log the RefusedError (errors.As) rather than the whole
// error when the URL may carry secrets.
type RefusedError struct {
	// Host is the host name or address the request named.
	Host string
	// Reason says what the policy refused.
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Host == "" {
		return "destination: refused: " + e.Reason
	}
	return fmt.Sprintf("destination: %s refused: %s", e.Host, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refused(host, format string, args ...any) error {
	return &RefusedError{Host: host, Reason: fmt.Sprintf(format, args...)}
}
