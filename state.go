package sortie

import "fmt"

// State is the lifecycle state of a run. The values are the remote-task
// states, written as in the remote transport API (for example "input-required").
type State string

// The run states. A run starts [StateSubmitted]; the terminal states are
// [StateCompleted], [StateFailed], [StateCancelled] and [StateRejected].
const (
	StateUnspecified   State = "unspecified"
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateAuthRequired  State = "auth-required"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCancelled     State = "cancelled"
	StateRejected      State = "rejected"
)

var knownStates = []State{
	StateUnspecified, StateSubmitted, StateWorking, StateInputRequired,
	StateAuthRequired, StateCompleted, StateFailed, StateCancelled, StateRejected,
}

// Terminal reports whether s is final: a run in a terminal state never
// changes again.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether s waits for the client: input-required or
// auth-required. [Client.Resume] continues such a run with a new attempt.
func (s State) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// ParseState returns the State named by s, or an error wrapping
// [ErrInvalidArgument] when s is not one of the known values.
func ParseState(s string) (State, error) {
	for _, k := range knownStates {
		if string(k) == s {
			return k, nil
		}
	}
	return "", invalidf("state", "unknown state %.40q (want one of %v)", s, knownStates)
}

// ExitCode is the process exit status the CLI uses for a run that ended in
// state s: 0 completed, 1 failed or rejected, 3 cancelled, 4 interrupted
// (input-required or auth-required). Non-final states give 1.
func (s State) ExitCode() int {
	switch {
	case s == StateCompleted:
		return 0
	case s == StateCancelled:
		return 3
	case s.Interrupted():
		return 4
	}
	return 1
}

// String returns the state's wire value.
func (s State) String() string { return string(s) }

var _ fmt.Stringer = StateWorking
