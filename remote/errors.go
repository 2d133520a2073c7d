package remote

import (
	"errors"
	"fmt"
)

// Sentinel errors transports wrap (with %w), so callers test with
// errors.Is.
var (
	// ErrTaskNotFound: the remote has no such task (or push
	// configuration).
	ErrTaskNotFound = errors.New("remote task not found")
	// ErrUnsupported: the remote does not offer the operation (for
	// example push notifications).
	ErrUnsupported = errors.New("not supported by the remote agent")
)

// InputRequiredError is returned by [Transport.Send] and
// [Transport.Stream] when the remote task paused for more input. Send a
// follow-up message with [CallRequest.TaskID] set to continue it.
type InputRequiredError struct {
	// Task is the paused task; Task.Status.Message says what is needed.
	Task *TaskSnapshot
}

func (e *InputRequiredError) Error() string {
	return fmt.Sprintf("remote task %s needs input: %s", e.Task.TaskID, e.Task.Status.Message)
}

// AuthRequiredError is returned by [Transport.Send] and
// [Transport.Stream] when the remote task paused until it is authorised.
// Authorise it (out of band, as the status message says), then send a
// follow-up message with [CallRequest.TaskID] set.
type AuthRequiredError struct {
	// Task is the paused task; Task.Status.Message says what is needed.
	Task *TaskSnapshot
}

func (e *AuthRequiredError) Error() string {
	return fmt.Sprintf("remote task %s needs authorisation: %s", e.Task.TaskID, e.Task.Status.Message)
}

// TaskError is returned by [Transport.Send] and [Transport.Stream] when the
// remote task failed, was cancelled or rejected, or stopped in a state that
// is not final.
type TaskError struct {
	// Task is the task as it ended; Task.Status carries the state and the
	// reason.
	Task *TaskSnapshot
}

func (e *TaskError) Error() string {
	msg := e.Task.Status.Message
	if msg == "" {
		msg = "no reason given"
	}
	return fmt.Sprintf("remote task %s %s: %s", e.Task.TaskID, e.Task.Status.State, msg)
}

// OutcomeError returns the error a unary call ends with for task t: nil
// when it completed, [*InputRequiredError] or [*AuthRequiredError] when it
// paused, and [*TaskError] otherwise.
func OutcomeError(t *TaskSnapshot) error {
	switch t.Status.State {
	case StateCompleted:
		return nil
	case StateInputRequired:
		return &InputRequiredError{Task: t}
	case StateAuthRequired:
		return &AuthRequiredError{Task: t}
	}
	return &TaskError{Task: t}
}
