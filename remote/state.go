package remote

import (
	"fmt"

	"github.com/sortie-run/sortie"
)

// TaskState is the lifecycle state of a remote task, written as in the
// remote-task API (for example "input-required"). A Sortie run's state has
// the same values.
type TaskState string

// The task states. The terminal ones are [StateCompleted], [StateFailed],
// [StateCancelled] and [StateRejected]; [StateInputRequired] and
// [StateAuthRequired] pause the task until the caller sends a follow-up
// message.
const (
	// StateUnspecified: the transport did not report a state.
	StateUnspecified TaskState = "unspecified"
	// StateSubmitted: accepted, not running yet.
	StateSubmitted TaskState = "submitted"
	// StateWorking: running.
	StateWorking TaskState = "working"
	// StateInputRequired: paused until the caller sends more input.
	StateInputRequired TaskState = "input-required"
	// StateAuthRequired: paused until the caller authorises it.
	StateAuthRequired TaskState = "auth-required"
	// StateCompleted: finished with a result (terminal).
	StateCompleted TaskState = "completed"
	// StateFailed: finished with an error (terminal).
	StateFailed TaskState = "failed"
	// StateCancelled: cancelled before it finished (terminal).
	StateCancelled TaskState = "cancelled"
	// StateRejected: refused by the remote agent (terminal).
	StateRejected TaskState = "rejected"
)

var allStates = []TaskState{StateUnspecified, StateSubmitted, StateWorking, StateInputRequired,
	StateAuthRequired, StateCompleted, StateFailed, StateCancelled, StateRejected}

// TerminalStates returns the terminal states: completed, failed, cancelled
// and rejected.
func TerminalStates() []TaskState {
	return []TaskState{StateCompleted, StateFailed, StateCancelled, StateRejected}
}

// Terminal reports whether s is final: a task in a terminal state never
// changes again. The rule is a run's ([sortie.State.Terminal]).
func (s TaskState) Terminal() bool { return sortie.State(s).Terminal() }

// Interrupted reports whether s waits for the caller: input-required or
// auth-required, as for a run ([sortie.State.Interrupted]).
func (s TaskState) Interrupted() bool { return sortie.State(s).Interrupted() }

// Final reports whether a call waiting on the task can stop: the state is
// terminal or interrupted.
func (s TaskState) Final() bool { return s.Terminal() || s.Interrupted() }

// String returns the state's wire value.
func (s TaskState) String() string { return string(s) }

// ParseTaskState returns the state named by s, or a
// [*sortie.ValidationError] for field "state" when s is not one of them.
func ParseTaskState(s string) (TaskState, error) {
	for _, k := range allStates {
		if string(k) == s {
			return k, nil
		}
	}
	return "", sortie.Invalidf("state", "unknown task state %q (want one of %v)", s, allStates)
}

var _ fmt.Stringer = StateWorking
