package sortie

import (
	"errors"
	"fmt"
	"testing"
)

// A throttled error is also an unavailable one (every retry of transient
// failures covers it), never the other way round.
func TestErrThrottledIsUnavailable(t *testing.T) {
	err := fmt.Errorf("reserve: %w", ErrThrottled)
	if !errors.Is(err, ErrThrottled) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("errors.Is(%v, ErrThrottled / ErrUnavailable) = %v / %v, want both", err, errors.Is(err, ErrThrottled), errors.Is(err, ErrUnavailable))
	}
	if errors.Is(fmt.Errorf("x: %w", ErrUnavailable), ErrThrottled) {
		t.Errorf("an unavailable error matches ErrThrottled, want not")
	}
}
