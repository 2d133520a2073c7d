package sortie

import (
	"errors"
	"fmt"
)

// Sentinel errors. Implementations wrap them (with %w) so callers test with
// errors.Is; the wrapped message says what was called and why.
var (
	// ErrNotFound: the run, event or reference does not exist.
	ErrNotFound = errors.New("not found")
	// ErrIdempotencyConflict: the idempotency key was used before with a
	// different request (the request hashes differ).
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
	// ErrConflict: a conditional write lost: the attempt is not the run's
	// current one, the launch ID differs, the attempt was already claimed or
	// ended, the version moved, or an event sequence number is taken with
	// other content or leaves a gap.
	ErrConflict = errors.New("conflict")
	// ErrTerminal: the run is in a terminal state and cannot change.
	ErrTerminal = errors.New("run is terminal")
	// ErrCancelRequested: the run has a cancel request, so no new attempt
	// may be claimed.
	ErrCancelRequested = errors.New("cancel requested")
	// ErrInvalidArgument: input failed validation. The error is a
	// [*ValidationError] naming the field and the limit.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the engine, control plane or launcher was closed.
	ErrClosed = errors.New("closed")
	// ErrUnavailable: a transient failure of a backing service; retrying may succeed.
	ErrUnavailable = errors.New("unavailable")
	// ErrThrottled: a backing service refused the call for its rate
	// (DynamoDB ProvisionedThroughputExceeded, ThrottlingException or
	// RequestLimitExceeded after the client's retries; Lambda
	// TooManyRequestsException); retrying after a pause will succeed once
	// the rate falls. It is a kind of unavailability: errors.Is(err,
	// ErrUnavailable) holds for it too, so every retry of transient
	// failures covers it, while callers that care tell it apart.
	ErrThrottled error = throttled{}
	// ErrRefused: the host's policy refused what a handler asked for (a
	// model outside its model policy, a tool call or a connection its
	// authorization hooks refused). The error names what was refused and
	// the rule; it never carries a tool call's arguments.
	ErrRefused = errors.New("refused by the host's policy")
	// ErrBudgetExhausted: the agent's budget for the current period is
	// spent, so the control plane refuses new runs of it until the period
	// ends (see [AgentBudget]). The error is an [*AgentBudgetError] naming
	// the agent, the budget and the spend.
	ErrBudgetExhausted = errors.New("agent budget exhausted")
	// ErrPayloadIntegrity: a payload kept by reference cannot be read back
	// as its [PayloadRef] names it: the stored object is missing, has
	// another size or SHA-256 (changed or replaced in the bucket), or was
	// sealed for another run or key. The error names the object's key and
	// the SHA-256 the reference holds; retrying does not cure it.
	ErrPayloadIntegrity = errors.New("payload integrity check failed")
)

// throttled is [ErrThrottled]'s type: it matches ErrUnavailable too.
type throttled struct{}

func (throttled) Error() string { return "throttled" }

// Is makes errors.Is(ErrThrottled, ErrUnavailable) true.
func (throttled) Is(target error) bool { return target == ErrUnavailable }

// ValidationError is returned for bad input. It names the offending field (a
// JSON path such as "agent.name" or "event.seq") and says which limit or rule
// was broken. It matches [ErrInvalidArgument] with errors.Is.
type ValidationError struct {
	Field  string // JSON name or path of the field
	Reason string // what is wrong, with the limit where there is one
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidArgument }

func invalidf(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Invalidf returns a [*ValidationError] for field; packages outside sortie
// use it so every input error has the same shape.
func Invalidf(field, format string, args ...any) error { return invalidf(field, format, args...) }

// LiveRunError refuses to delete a run that is not terminal. It matches
// ErrConflict.
type LiveRunError struct {
	ID    RunID
	State State
}

func (e *LiveRunError) Error() string {
	return fmt.Sprintf("run %s is %s, not terminal: cancel it first", e.ID, e.State)
}

// Is reports whether target is ErrConflict.
func (e *LiveRunError) Is(target error) bool { return target == ErrConflict }

// TerminalError refuses a change of a terminal run (resuming it,
// claiming, launching or deferring an attempt, recording its events or
// steps), naming the run, its state and the change (Op, a verb such as
// "resume"; may be empty). It matches ErrTerminal.
type TerminalError struct {
	ID    RunID
	State State
	Op    string
}

func (e *TerminalError) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("run %s is %s: a terminal run does not change", e.ID, e.State)
	}
	return fmt.Sprintf("run %s is %s: a terminal run does not change (%s)", e.ID, e.State, e.Op)
}

// Is reports whether target is ErrTerminal.
func (e *TerminalError) Is(target error) bool { return target == ErrTerminal }

// NotInterruptedError refuses to resume a run that is not interrupted
// (input-required or auth-required) and not terminal either: submitted,
// queued or working. It matches ErrConflict.
type NotInterruptedError struct {
	ID    RunID
	State State
}

func (e *NotInterruptedError) Error() string {
	return fmt.Sprintf("run %s is %s: only an input-required or auth-required run resumes", e.ID, e.State)
}

// Is reports whether target is ErrConflict.
func (e *NotInterruptedError) Is(target error) bool { return target == ErrConflict }
