package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// Error types the worker runtime reports, besides those of package sortie.
const (
	// errTypeError is a handler's plain (retryable) or [Permanent] error.
	errTypeError = "error"
	// errTypeInvalid is a handler error matching sortie.ErrInvalidArgument.
	errTypeInvalid = "invalid_argument"
	// errTypePanic is a handler that panicked.
	errTypePanic = "panic"
	// errTypeOutput is an output or interrupt the runtime could not report.
	errTypeOutput = "output"
	// errTypeTerminated is an attempt stopped by its worker process's shutdown.
	errTypeTerminated = "terminated"
	// errTypeClaimLost is an attempt whose claim was lost (another worker or
	// the reconciler ended it).
	errTypeClaimLost = "claim_lost"
	// errTypeProtocol is an exec worker that wrote an invalid message.
	errTypeProtocol = "protocol"
	// errTypeRefused is a handler error matching sortie.ErrRefused (a
	// model, tool call, connection or webhook step the host's policy
	// refused): trying again would be refused again.
	errTypeRefused = "refused"
	// errTypeExit is an exec worker that exited without a terminal message.
	errTypeExit = "exit"
)

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not retryable: the run fails at once. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type rejectedError struct{ reason string }

func (e *rejectedError) Error() string { return "rejected: " + e.reason }

// Rejected returns an error of type "rejected" ([sortie.ErrorTypeRejected]):
// the run becomes rejected with reason, without retries.
func Rejected(reason string) error { return &rejectedError{reason: reason} }

type interruptError struct {
	state      sortie.State
	prompt     string
	checkpoint any
}

func (e *interruptError) Error() string {
	return fmt.Sprintf("interrupt: %s: %s", e.state, e.prompt)
}

// Interrupt returns the error a handler returns to pause the run in state
// (input-required or auth-required) with prompt. checkpoint, marshalled to
// JSON (no plaintext credential), is handed back with the client's input
// to the next attempt through [Call.Resume]. One over
// [sortie.MaxResultBytes] is kept in the worker's payload store, as a large
// result is; without one it fails the attempt naming the limit.
func Interrupt(state sortie.State, prompt string, checkpoint any) error {
	return &interruptError{state: state, prompt: prompt, checkpoint: checkpoint}
}

// outcomeOf turns a handler's return values into an outcome.
func outcomeOf(out any, err error) sortie.Outcome {
	if err == nil {
		return resultOutcome(out)
	}
	var (
		ie *interruptError
		re *rejectedError
		pe *permanentError
		em *sortie.ErrorMessage
	)
	switch {
	case errors.As(err, &ie):
		return interruptOutcome(ie)
	case errors.As(err, &re):
		return errorOutcome(sortie.ErrorTypeRejected, re.reason, false)
	case errors.As(err, &em):
		return sortie.Outcome{Error: em}
	case errors.Is(err, sortie.ErrInvalidArgument):
		return errorOutcome(errTypeInvalid, err.Error(), false)
	case errors.Is(err, sortie.ErrRefused):
		return errorOutcome(errTypeRefused, err.Error(), false)
	case errors.As(err, &pe):
		return errorOutcome(errTypeError, err.Error(), false)
	}
	return errorOutcome(errTypeError, err.Error(), true)
}

func resultOutcome(out any) sortie.Outcome {
	b, err := json.Marshal(out)
	if err != nil {
		return errorOutcome(errTypeOutput, "marshal output: "+err.Error(), false)
	}
	return sortie.Outcome{Result: b} // Execute keeps a large one by reference or refuses it
}

func interruptOutcome(ie *interruptError) sortie.Outcome {
	in := &sortie.Interrupt{State: ie.state, Prompt: ie.prompt}
	if ie.checkpoint != nil {
		b, err := json.Marshal(ie.checkpoint)
		if err != nil {
			return errorOutcome(errTypeOutput, "marshal interrupt checkpoint: "+err.Error(), false)
		}
		in.Checkpoint = b
	}
	// A checkpoint over sortie.MaxResultBytes is kept by reference or
	// refused when the attempt ends (storeCheckpoint).
	head := sortie.Interrupt{State: in.State, Prompt: in.Prompt}
	if err := head.Validate(); err != nil {
		return errorOutcome(errTypeOutput, err.Error(), false)
	}
	return sortie.Outcome{Interrupt: in}
}

// errorOutcome builds an error outcome whose message fits the limits.
func errorOutcome(typ, msg string, retryable bool) sortie.Outcome {
	return sortie.Outcome{Error: &sortie.ErrorMessage{Type: typ, Message: clip(msg), Retryable: retryable}}
}

// clip makes s valid UTF-8 of at most sortie.MaxEventTextBytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= sortie.MaxEventTextBytes {
		return s
	}
	s = s[:sortie.MaxEventTextBytes-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// ComputeEndedError is what [Worker.Execute] returns, without finishing
// the attempt, when the warm worker process running its handler (see
// [Worker.Warm]) died during it: the attempt's compute ended without a
// word, which its launcher reports ([sortie.ExitWatcher]) so the engine
// ends the attempt with error type exited. The events the process sent
// before are stored.
type ComputeEndedError struct {
	// Status says how the process ended: PhaseFailed with its exit code
	// or signal.
	Status sortie.Status
}

func (e *ComputeEndedError) Error() string {
	return "worker: the worker process running the attempt ended without a word: " + e.Status.Reason
}

// ExitStatus returns Status: the launcher's word on the attempt's compute.
func (e *ComputeEndedError) ExitStatus() sortie.Status { return e.Status }
