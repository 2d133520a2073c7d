package sortie

import "context"

// Launcher starts attempts on a compute service.
//
// Start hands inv to the service and returns the service's reference. It is
// idempotent on inv.LaunchID: a retried Start must not make a second live
// attempt (a duplicate delivery is refused by the worker's claim). Start may
// run the whole attempt before returning (some services do), so the engine
// never waits on it. It returns an error wrapping ErrInvalidArgument when inv
// breaks a provider limit (naming it), ErrNotFound when the compute target
// (function, job) does not exist, and ErrUnavailable for a transient
// failure. The engine fails the run at once on the first two (retrying
// cannot help) and retries the attempt on anything else.
type Launcher interface {
	Start(ctx context.Context, inv *Invocation) (Ref, error)
}

// Canceler is an optional Launcher capability: a provider-side stop. Cancel
// is idempotent: not-found or already stopped is success.
type Canceler interface {
	Cancel(ctx context.Context, ref Ref) error
}

// Describer is an optional Launcher capability: a pure read of an attempt's
// provider status, for the reconciler.
type Describer interface {
	Describe(ctx context.Context, ref Ref) (Status, error)
}

// Ref is a fully qualified, serializable handle to a launched attempt,
// stored on the attempt and never re-derived from configuration.
type Ref struct {
	// Provider is "local", "lambda" or "cloudrun".
	Provider string `json:"provider"`
	Account  string `json:"account,omitempty"`
	Region   string `json:"region,omitempty"`
	// Resource is the function, job or command the attempt runs on.
	Resource string `json:"resource,omitempty"`
	// ID is the provider's handle: request ID, execution name, process ID.
	ID       string `json:"id"`
	RunID    RunID  `json:"run_id"`
	Attempt  int    `json:"attempt"`
	LaunchID string `json:"launch_id"`
	// Detail holds provider-specific fields (for example a process start time).
	Detail map[string]string `json:"detail,omitempty"`
}

// Phase is a provider's view of a launched attempt.
type Phase string

// The phases Describe reports. PhaseUnknown means the Describe call itself
// failed, which is not the same as PhaseNotFound.
const (
	PhaseRunning   Phase = "running"
	PhaseSucceeded Phase = "succeeded"
	PhaseFailed    Phase = "failed"
	PhaseNotFound  Phase = "not-found"
	PhaseUnknown   Phase = "unknown"
)

// Status is what Describe reports.
type Status struct {
	Phase     Phase  `json:"phase"`
	Transient bool   `json:"transient,omitempty"`
	Reason    string `json:"reason,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	// LogURL locates the attempt's logs (a file path for local, a console URL otherwise).
	LogURL string `json:"log_url,omitempty"`
}
