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
// provider status. The reconciler asks it what became of an attempt that
// was launched but not claimed, or whose lease expired, and ends the
// attempt with the provider's reason (see [Status]) instead of waiting for
// a timeout; it never completes a run from an execution's success.
type Describer interface {
	Describe(ctx context.Context, ref Ref) (Status, error)
}

// ExitWatcher is an optional Launcher capability: the launcher learns at
// once that an attempt's compute ended (the local launcher is its worker
// process's parent) and tells the engine, so an attempt whose compute
// ended without a word from its worker is ended now, not at its start
// timeout or lease.
//
// The contract, for every launcher that implements it (subprocess per
// attempt, in-process, or a pool of reused worker processes):
//
//   - WatchExits registers f and returns stop; after stop returns, f is
//     not called again. Several watchers may be registered.
//   - f is called once per attempt this launcher started, after the
//     attempt's compute is done with it: its process exited, its
//     in-process function returned, or the pooled worker that held it
//     finished it or died. A pool reports the attempt, not the process:
//     one Ref per attempt the dead worker held.
//   - ref is the Ref Start returned for the attempt; st is final: Phase
//     succeeded (the compute ended normally, exit code 0), failed (ExitCode,
//     Signal and Reason say how), or cancelled (stopped by Cancel).
//   - f may be called from any goroutine, concurrently, and must not block
//     for long. It may be called before Start's caller stored the Ref.
//
// The engine acts only when the control plane still shows the attempt
// live with that launch ID and Ref ID: it ends it with error type
// [ErrorTypeExited] (retryable) and records st on [Attempt.Exit]. A worker
// that reported an outcome before its compute ended is never overridden,
// and an exit is never a success: only the worker's result completes a run.
type ExitWatcher interface {
	WatchExits(f func(ref Ref, st Status)) (stop func())
}

// Queuer is an optional Launcher capability of a launcher whose provider
// may hold a launch in a queue before any worker sees it (a Lambda
// asynchronous invocation waits while the function is throttled, retried
// with backoff for up to the function's maximum event age). MaxQueueMs is
// that bound, in ms. The engine adds it to the run's start_timeout_ms for
// the attempts of this launcher, so a healthy run held in a throttled
// queue is not ended (and relaunched, adding one more queued event) while
// the provider may still deliver it.
type Queuer interface {
	MaxQueueMs() int64
}

// InvocationLimiter is an optional Launcher capability: the largest
// encoded [Invocation] the provider carries. The engine checks every
// submission and resume against it before anything is stored, and refuses
// one whose invocation would be larger with a [*ValidationError] naming the
// largest variable and the limit, instead of failing at launch.
type InvocationLimiter interface {
	// MaxInvocationBytes returns the limit in bytes and names it, for
	// example "Cloud Run Jobs environment variable value (SORTIE_INVOCATION)".
	MaxInvocationBytes() (limit int, what string)
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
	// PhaseCancelled: the provider stopped the attempt's compute on a cancel
	// request, Sortie's own (Canceler) or one made outside Sortie (a
	// console, a CLI of the provider).
	PhaseCancelled Phase = "cancelled"
	PhaseNotFound  Phase = "not-found"
	PhaseUnknown   Phase = "unknown"
)

// Status is what Describe reports, and what an [ExitWatcher] reports of
// compute that ended.
type Status struct {
	Phase Phase `json:"phase"`
	// Transient marks a PhaseUnknown that retrying may resolve.
	Transient bool `json:"transient,omitempty"`
	// Reason is the provider's own words: an exit status, an execution's
	// condition message, "out of memory".
	Reason string `json:"reason,omitempty"`
	// ExitCode is the worker process's exit status (-1 when a signal
	// ended it); nil when the provider does not say.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal names the signal that ended the worker process ("SIGKILL").
	Signal string `json:"signal,omitempty"`
	// LogURL locates the attempt's logs (a file path for local, a console URL otherwise).
	LogURL string `json:"log_url,omitempty"`
}
