package controlplane

import (
	"fmt"

	"github.com/sortie-run/sortie"
)

// TooLargeError is a driver's refusal of a change whose run would not fit
// its store: Size and Limit in bytes, What names the store's limit. It
// matches sortie.ErrInvalidArgument with errors.Is, so a client's
// oversize input (resume input, variables) reads as bad input; Finish
// turns it into an [sortie.ErrorTypeOutputTooLarge] outcome instead.
type TooLargeError struct {
	Run   sortie.RunID
	Size  int
	Limit int
	What  string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("invalid run: run %s would be stored as %d bytes, over %s of %d bytes; nothing was stored", e.Run, e.Size, e.What, e.Limit)
}

// Is makes errors.Is(err, sortie.ErrInvalidArgument) true.
func (e *TooLargeError) Is(target error) bool { return target == sortie.ErrInvalidArgument }

// StorableOutcome returns o, or, when o's result or checkpoint is over
// [sortie.MaxResultBytes], the permanent [sortie.ErrorTypeOutputTooLarge]
// error outcome (with o's usage) that Finish stores instead. Callers that
// validate an outcome before Finish (the worker callback routes) apply it
// first, so an oversize output ends the attempt instead of being refused.
func StorableOutcome(o sortie.Outcome) sortie.Outcome {
	if big := tooLargeOutcome(o); big != nil {
		return *big
	}
	return o
}

// tooLargeOutcome returns the outcome that replaces o when o's result or
// checkpoint is over [sortie.MaxResultBytes], or nil when both fit. The
// usage is kept.
func tooLargeOutcome(o sortie.Outcome) *sortie.Outcome {
	what, size := "result", len(o.Result)
	if o.Interrupt != nil {
		what, size = "interrupt checkpoint", len(o.Interrupt.Checkpoint)
	}
	if size <= sortie.MaxResultBytes {
		return nil
	}
	return outputTooLarge(o, fmt.Sprintf("the %s is %d bytes of JSON, over the limit of %d bytes (sortie.MaxResultBytes)", what, size, sortie.MaxResultBytes))
}

// outputTooLarge is the permanent error outcome, with o's usage, that ends
// an attempt whose output cannot be stored.
func outputTooLarge(o sortie.Outcome, msg string) *sortie.Outcome {
	return &sortie.Outcome{Usage: o.Usage, Error: &sortie.ErrorMessage{Type: sortie.ErrorTypeOutputTooLarge, Message: msg}}
}
