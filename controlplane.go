package sortie

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ControlPlane stores runs, their ordered events, results, idempotency
// records, cancellation, leases and push configurations. Every method is safe for concurrent use,
// also by several processes sharing the same backing store.
//
// Every state change is conditional: implementations apply the transitions
// of package controlplane atomically (a transaction, or a write conditional
// on the run's Version). Returned runs are copies the caller may keep.
type ControlPlane interface {
	// Reserve creates the run r.Run and its idempotency record atomically,
	// or returns the existing run when an unexpired record with the same
	// scope and key exists (created is false). It MUST return
	// ErrIdempotencyConflict when that record's request hash differs. A run
	// without an idempotency key is always created. With r.LaunchID the new
	// run has attempt 1 recorded (see [Reservation]).
	Reserve(ctx context.Context, r *Reservation) (run *Run, created bool, err error)

	// Get returns the run. It MUST return ErrNotFound for an unknown ID.
	Get(ctx context.Context, id RunID) (*Run, error)

	// List returns runs matching q, newest first. Page tokens are opaque;
	// a malformed token MUST give ErrInvalidArgument.
	List(ctx context.Context, q ListQuery) (*RunPage, error)

	// RecordLaunch records attempt l.Attempt with its launch ID before
	// anything is sent to compute. It MUST return ErrConflict unless
	// l.Attempt is the run's attempt + 1 and the previous attempt has ended,
	// ErrTerminal for a terminal run, ErrCancelRequested when cancel was
	// requested, and ErrConflict when no attempts remain.
	RecordLaunch(ctx context.Context, l Launch) (*Run, error)

	// SetRef stores the launcher's reference on the attempt with that
	// launch ID and returns the run as stored, so the engine sees a cancel
	// requested while Start was in flight. It MUST return ErrConflict when
	// the launch ID does not match the attempt. It is the one write a
	// terminal run takes: Start may return only after the attempt ended,
	// and the reference (request ID, log location) still belongs on it;
	// nothing else changes.
	SetRef(ctx context.Context, id RunID, attempt int, launchID string, ref Ref) (*Run, error)

	// Claim activates an attempt for one worker. It succeeds once per
	// attempt and MUST return ErrConflict when the attempt is not the run's
	// current one, the launch ID differs, the attempt was claimed or ended;
	// ErrCancelRequested when cancel was requested; ErrTerminal for a
	// terminal run. The claim's compute shape (c.Usage) is stored on the
	// attempt's Usage in the same write, after [Usage.ValidateShape]
	// (an invalid shape is a [*ValidationError] and stores nothing).
	Claim(ctx context.Context, c Claim) (*Run, error)

	// Heartbeat extends the claimed attempt's lease and returns the run, so
	// the worker sees CancelRequested. It MUST return ErrConflict (or
	// ErrTerminal) when the claim is no longer the live one. It ignores
	// c.Usage.
	Heartbeat(ctx context.Context, c Claim) (*Run, error)

	// AppendEvents stores events of the claimed, live attempt. An event with
	// Seq 0 gets the next number; an explicit Seq must not leave a gap. The
	// same event at the same Seq again is a no-op; other content at a taken
	// Seq MUST give ErrConflict, and so must a stale claim. It returns the
	// events as stored (with Attempt and Seq set).
	AppendEvents(ctx context.Context, a Append) ([]Event, error)

	// Events returns up to limit events after the cursor in (attempt, seq)
	// order, crossing attempts. ErrNotFound for an unknown run.
	Events(ctx context.Context, id RunID, after Cursor, limit int) ([]Event, error)

	// RecordStep records a durable step completed by the claimed, live
	// attempt s names (s.Step.Attempt must be s.Attempt) and returns it
	// as stored, RecordedMs set to s.NowMs. The first record of a name
	// wins: the same step again ([Step.Same]) is a no-op that returns the
	// stored one; other content under a recorded name MUST give
	// ErrConflict, and so must a stale claim (ErrTerminal for a terminal
	// run: its steps never change). A step breaking [Step.Validate], or a
	// run that would hold more than [MaxSteps] steps or [MaxStepsBytes],
	// gives a [*ValidationError].
	RecordStep(ctx context.Context, s StepRecord) (*Step, error)

	// Steps returns the run's recorded steps in [SortSteps] order (an
	// empty list when it has none). ErrNotFound for an unknown run.
	Steps(ctx context.Context, id RunID) ([]Step, error)

	// Finish ends an attempt with its outcome. The first finish of an
	// attempt wins; a later one is a no-op that returns the run unchanged
	// and no error. A finish whose launch ID does not match the attempt, or
	// (with IfVersion set) whose version moved, MUST give ErrConflict.
	Finish(ctx context.Context, f Finish) (*Run, error)

	// RequestCancel sets the sticky cancel flag. A run with no live claimed
	// attempt becomes cancelled at once. A terminal run is returned
	// unchanged with no error.
	RequestCancel(ctx context.Context, id RunID, reason string) (*Run, error)

	// Resume continues an input-required or auth-required run with the
	// client's input: the run becomes working and due for its next
	// attempt. It MUST return ErrConflict for a run in another state
	// (ErrTerminal when terminal).
	Resume(ctx context.Context, id RunID, input json.RawMessage) (*Run, error)

	// ResumeRef is Resume with input kept in the engine's [PayloadStore]:
	// the run holds ref ([Run.ResumeInputRef]) instead of the input. A
	// ref that is not valid ([PayloadRef.Validate]) is a
	// [*ValidationError] naming "input_ref".
	ResumeRef(ctx context.Context, id RunID, ref *PayloadRef) (*Run, error)

	// Defer moves the reconciler's next look at the run (LeaseExpiresMs)
	// to d.UntilMs without a heartbeat: the reconciler asked the launcher
	// and the attempt's compute is still starting (an unclaimed attempt:
	// never past its start deadline, Attempt.StartByMs) or alive (a
	// claimed attempt given a lease of grace by a reconciler that was not
	// running). It MUST return ErrConflict when the attempt is not the
	// run's current one, the launch ID differs, the attempt ended, or
	// (with d.IfVersion set) the version moved; ErrCancelRequested when
	// cancel was requested and its deadline (Run.CancelRequestedMs plus
	// the cancel timeout) passed or is unknown; ErrTerminal for a terminal
	// run. After a cancel request the lease never moves past that
	// deadline.
	Defer(ctx context.Context, d Deferral) (*Run, error)

	// Expired returns up to limit non-terminal runs whose LeaseExpiresMs is
	// set and at or before nowMs, oldest lease first.
	Expired(ctx context.Context, nowMs int64, limit int) ([]*Run, error)

	// Delete removes a terminal run and everything stored under it: its
	// events, steps, push configurations and the idempotency record that
	// reserved it (a later submission with the key creates a new run;
	// DynamoDB deletes the record of the default scope, the engine's). A
	// run that is not terminal MUST give a [*LiveRunError] (it matches
	// ErrConflict) and stays as it was (cancel it first); an
	// unknown run MUST give ErrNotFound. Payload objects are not the
	// control plane's: [Engine.Delete] removes them.
	Delete(ctx context.Context, id RunID) error

	// Ended returns the IDs of up to limit terminal runs last updated
	// (UpdatedMs) before beforeMs, Unix ms, oldest first: the runs a
	// retention deletes. limit ≤ 0 means 100; it is at most 1000.
	Ended(ctx context.Context, beforeMs int64, limit int) ([]RunID, error)

	// Queued returns up to limit runs waiting for a slot of concurrency
	// key ([Run.Queued]), oldest first (run ID order, which is submission
	// order).
	Queued(ctx context.Context, key string, limit int) ([]*Run, error)

	// QueuePosition returns 1 plus the number of runs queued under key
	// before run id.
	QueuePosition(ctx context.Context, key string, id RunID) (int, error)

	// Queues returns the concurrency keys that have queued runs, with
	// their counts of runs holding slots and waiting.
	Queues(ctx context.Context) ([]QueueState, error)

	// Close releases resources. Calls after Close return ErrClosed.
	Close() error

	// PushStore keeps the runs' push configurations next to the runs;
	// its methods return ErrClosed after Close too.
	PushStore
}

// Notifier is an optional interface of a control plane: it wakes in-process
// followers when a run changes, so they need not poll.
type Notifier interface {
	// Subscribe returns a channel that receives a value (coalesced) after
	// each change of the run, and a function that ends the subscription.
	Subscribe(id RunID) (<-chan struct{}, func())
}

// Reservation is what Reserve stores: the new run (ID, state submitted,
// version 1) and, when IdempotencyKey is set on the run, its record.
type Reservation struct {
	Run *Run
	// Scope namespaces idempotency keys. Optional; defaults to "default".
	Scope string
	// TTLMs is how long the idempotency record holds, in ms. Optional;
	// defaults to 24 h. An expired record counts as absent.
	TTLMs int64
	// NowMs is the reservation time, Unix ms.
	NowMs int64
	// LaunchID, when set, records attempt 1 with this launch ID in the
	// same write, exactly as RecordLaunch would right after (the engine
	// seals the attempt first): one write instead of two. A duplicate
	// reservation returns the existing run with its own launch. Optional.
	LaunchID string
	// StartTimeoutMs and CheckMs are the launch's, as in [Launch]; used
	// with LaunchID only. Optional.
	StartTimeoutMs, CheckMs int64
	// Usage is what the engine consumed for attempt 1 before its launch
	// (the key-management requests of its seals), recorded on the attempt
	// with LaunchID. Optional.
	Usage *Usage
	// SpendLimit, when set, makes Reserve refuse a new run (never a
	// duplicate of a live idempotency key) with an [*AgentBudgetError]
	// when the agent's spend in its window reached the limit; nothing is
	// stored then. Optional.
	SpendLimit *SpendLimit
}

// Launch asks RecordLaunch to record attempt Attempt with LaunchID.
type Launch struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	// StartTimeoutMs is how long a worker has to claim the attempt, in ms
	// (Attempt.StartByMs is NowMs plus it). Optional; defaults to the
	// run's Policy.StartTimeoutMs. The engine adds a [Queuer]'s queue age.
	StartTimeoutMs int64
	// CheckMs is when the reconciler first looks at the unclaimed attempt,
	// Unix ms, before its start deadline (the engine asks a [Describer]
	// about it then). Optional; defaults to the start deadline.
	CheckMs int64
	NowMs   int64
	// Usage is what the engine consumed for the attempt before its launch
	// (the key-management requests of its seal), recorded on the attempt;
	// the worker's usage is added to it when the attempt ends. Optional.
	Usage *Usage
	// Limit is the concurrency limit the launch of a queued run is
	// admitted under (the agent's current one). Optional; defaults to the
	// run's [RunConcurrency.Limit].
	Limit int
}

// Deferral asks Defer to move the next look at attempt Attempt of a run
// (launch LaunchID) to UntilMs, Unix ms.
type Deferral struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	UntilMs  int64
	// IfVersion, when non-zero, makes the deferral conditional on the
	// run's Version.
	IfVersion int64
	NowMs     int64
}

// Claim identifies a worker's claim of one attempt.
type Claim struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	// Owner names the worker (host, process, request ID) for operators.
	Owner string
	// Usage is the compute shape of the worker's execution environment,
	// stated when it claims: MemoryMB, VCPU, Arch and Billing only (see
	// [Usage.ValidateShape]). Claim stores it on the attempt's Usage, so
	// a budget prices the live attempt's compute before its finish
	// reports usage (the finish's shape wins where it sets a field).
	// Optional: nil prices the compute at what the attempt recorded (a
	// local worker's compute is priced 0 by default); Heartbeat ignores it.
	Usage *Usage
	NowMs int64
}

// Append carries events of a claimed attempt.
type Append struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	Events   []Event
	NowMs    int64
}

// Finish ends attempt Attempt of a run.
type Finish struct {
	RunID    RunID
	Attempt  int
	LaunchID string
	Outcome  Outcome
	// IfVersion, when non-zero, makes the finish conditional on the run's
	// Version (the reconciler uses it so a late heartbeat wins).
	IfVersion int64
	// Exit is what the launcher reported of the attempt's compute, stored
	// on [Attempt.Exit]. Optional.
	Exit  *Status
	NowMs int64
}

// ListQuery filters and pages runs. Zero fields do not filter.
type ListQuery struct {
	ContextID string
	State     State
	Agent     string
	// PageSize is the most runs returned. Optional; defaults to 50, at most 1000.
	PageSize  int
	PageToken string
}

// Validate checks the query's fields and returns a [*ValidationError].
func (q *ListQuery) Validate() error {
	if q.PageSize < 0 || q.PageSize > 1000 {
		return invalidf("page_size", "%d outside 0..1000", q.PageSize)
	}
	if q.State != "" {
		if _, err := ParseState(string(q.State)); err != nil {
			return err
		}
	}
	if len(q.ContextID) > 256 {
		return invalidf("context_id", "%d bytes, at most 256", len(q.ContextID))
	}
	if len(q.PageToken) > 1024 {
		return invalidf("page_token", "%d bytes, at most 1024", len(q.PageToken))
	}
	return nil
}

// RunPage is one page of a List. NextPageToken is empty on the last page.
type RunPage struct {
	Runs          []*Run `json:"runs"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// Cursor is a follow position: the events after (Attempt, Seq). The zero
// Cursor is the start of the run. Its text form is "ATTEMPT.SEQ".
type Cursor struct {
	Attempt int
	Seq     int64
}

// String returns "ATTEMPT.SEQ".
func (c Cursor) String() string { return fmt.Sprintf("%d.%d", c.Attempt, c.Seq) }

// Before reports whether c sorts before o.
func (c Cursor) Before(o Cursor) bool {
	return c.Attempt < o.Attempt || (c.Attempt == o.Attempt && c.Seq < o.Seq)
}

// ParseCursor parses the text form of a [Cursor]; "" is the zero cursor.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	a, q, ok := strings.Cut(s, ".")
	attempt, err1 := strconv.Atoi(a)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if !ok || err1 != nil || err2 != nil || attempt < 0 || seq < 0 {
		return Cursor{}, invalidf("cursor", "%.40q is not ATTEMPT.SEQ", s)
	}
	return Cursor{Attempt: attempt, Seq: seq}, nil
}
