package sortie

import (
	"encoding/json"
	"time"
)

// Manifest is the resolved description of an agent: what a worker needs to
// execute it. The runtime reference is opaque to the request: "go:NAME" names
// a Go handler registered in the worker, "exec:ID" a host-pinned command in the
// worker host's allowlist. No path is ever taken from a manifest.
type Manifest struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Runtime     string `json:"runtime"`
	Description string `json:"description,omitempty"`
	// Policy holds the agent's defaults; a submission may override them.
	Policy Policy `json:"policy,omitzero"`
	// Concurrency limits how many of the agent's runs (per key) hold
	// slots at once; see [Concurrency]. Optional; nil means no limit.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// Models are the model profiles the agent uses, by profile name
	// (1-63 characters of a-z, 0-9, '.', '_', '-'; at most
	// [MaxModelProfiles]); a submission may replace some
	// ([SubmitRequest.Models]). The host's [ModelPolicy] is checked at
	// submit, and handlers resolve them with functions.Call.Model.
	// Optional.
	Models map[string]ModelProfile `json:"models,omitempty"`
	// Budget caps what the agent's runs may cost per period; see
	// [AgentBudget]. Optional; nil means none.
	Budget *AgentBudget `json:"budget,omitempty"`
	// InputSchema declares the agent's variables: a JSON Schema object
	// (draft 2020-12 unless its $schema names another draft; one
	// document, whose $refs stay inside it) of at most
	// [MaxInputSchemaBytes]. The engine's [InputChecker] checks each
	// submission's variables against it before anything is stored and
	// refuses a mismatch with a [*ValidationError] naming the field
	// ("variables.top"). Its "description" and its properties' say what
	// the variables do (`sortie describe`). A run's stored manifest
	// drops it. Optional.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Validate checks the manifest's fields and returns a [*ValidationError].
// It checks the input schema's shape and size only; an [InputChecker]
// (package inputschema) compiles it.
func (m *Manifest) Validate() error {
	if err := checkName("agent.name", m.Name); err != nil {
		return err
	}
	if len(m.Version) > 64 {
		return invalidf("agent.version", "%d bytes, limit 64", len(m.Version))
	}
	if !runtimePattern.MatchString(m.Runtime) {
		return invalidf("agent.runtime", "%.80q must be go:NAME or exec:ID (opaque IDs, never paths)", m.Runtime)
	}
	if len(m.Description) > 1024 {
		return invalidf("agent.description", "%d bytes, limit 1024", len(m.Description))
	}
	if m.Concurrency != nil {
		if err := m.Concurrency.Validate(); err != nil {
			return err
		}
	}
	if err := checkModelProfiles("agent.models", m.Models); err != nil {
		return err
	}
	if m.Budget != nil {
		if err := m.Budget.Validate(); err != nil {
			return err
		}
	}
	if err := checkInputSchema(m.InputSchema); err != nil {
		return err
	}
	return m.Policy.checkRequested()
}

// Policy is a run's retry and liveness policy. Zero fields take the defaults
// documented on each field.
type Policy struct {
	// MaxAttempts is the most attempts a run gets. Optional; defaults to 3.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// HeartbeatMs is how often a worker heartbeats, in ms: 0 (the
	// default, 5000) or at least [MinHeartbeatMs]. Optional.
	HeartbeatMs int64 `json:"heartbeat_ms,omitempty"`
	// LeaseMs is how long a claim lives without a heartbeat, in ms.
	// Optional; defaults to three heartbeat intervals.
	LeaseMs int64 `json:"lease_ms,omitempty"`
	// StartTimeoutMs bounds the gap between a recorded launch and the
	// worker's claim, in ms. Optional; defaults to 60000.
	StartTimeoutMs int64 `json:"start_timeout_ms,omitempty"`
	// AttemptTimeoutMs bounds one attempt from its launch, in ms; the worker
	// stops with an error of type "deadline" before it. Optional; defaults
	// to 900000 (15 minutes).
	AttemptTimeoutMs int64 `json:"attempt_timeout_ms,omitempty"`
	// BackoffMs is the delay before attempt 2, in ms; it doubles for each
	// later attempt, with up to 50% jitter. Optional; defaults to 1000.
	BackoffMs int64 `json:"backoff_ms,omitempty"`
	// BackoffMaxMs caps the backoff, in ms. Optional; defaults to 60000.
	BackoffMaxMs int64 `json:"backoff_max_ms,omitempty"`
	// CancelTimeoutMs is how long a claimed attempt has to stop once its
	// run's cancel was requested, in ms: the run becomes cancelled when the
	// worker stops, or when this has passed without it (whatever its
	// lease). Optional; defaults to [DefaultCancelTimeoutMs] (15000).
	CancelTimeoutMs int64 `json:"cancel_timeout_ms,omitempty"`
	// MaxCostNanoUSD is the run's budget, in nano-dollars (10⁻⁹ USD), as
	// the control plane's price table prices its attempts' usage: no
	// attempt is launched once it is spent, and a running attempt is
	// stopped when its cost projected to its next heartbeat would pass
	// it; the run then fails with error type [ErrorTypeBudgetExceeded].
	// Optional; 0 means no budget.
	MaxCostNanoUSD int64 `json:"max_cost_nano_usd,omitempty"`
}

const maxPolicyMs = int64(24 * time.Hour / time.Millisecond)

// MinHeartbeatMs is the shortest heartbeat interval a submission or an
// agent may ask for, in ms (policy.heartbeat_ms): each heartbeat is a
// control-plane write (a DynamoDB write unit), so a run asking for 1 ms
// would cost a thousand writes a second.
const MinHeartbeatMs = 100

// Validate checks the policy's ranges and returns a [*ValidationError].
func (p Policy) Validate() error {
	if p.MaxAttempts < 0 || p.MaxAttempts > 100 {
		return invalidf("policy.max_attempts", "%d outside 0..100", p.MaxAttempts)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"policy.heartbeat_ms", p.HeartbeatMs}, {"policy.lease_ms", p.LeaseMs},
		{"policy.start_timeout_ms", p.StartTimeoutMs}, {"policy.attempt_timeout_ms", p.AttemptTimeoutMs},
		{"policy.backoff_ms", p.BackoffMs}, {"policy.backoff_max_ms", p.BackoffMaxMs},
		{"policy.cancel_timeout_ms", p.CancelTimeoutMs},
	} {
		if f.v < 0 || f.v > maxPolicyMs {
			return invalidf(f.name, "%d outside 0..%d ms", f.v, maxPolicyMs)
		}
	}
	if p.MaxCostNanoUSD < 0 {
		return invalidf("policy.max_cost_nano_usd", "%d is negative", p.MaxCostNanoUSD)
	}
	return nil
}

// checkRequested is Validate for a policy a submission or an agent asks
// for, which also keeps a heartbeat at least [MinHeartbeatMs] apart. (An
// engine's own DefaultPolicy and tests' stored runs may go lower.)
func (p Policy) checkRequested() error {
	if p.HeartbeatMs != 0 && p.HeartbeatMs < MinHeartbeatMs {
		return invalidf("policy.heartbeat_ms", "%d ms is under the minimum of %d ms (0 means the default, 5000 ms); every heartbeat is a control-plane write", p.HeartbeatMs, MinHeartbeatMs)
	}
	return p.Validate()
}

// checkLiveness checks an effective policy (defaults applied): a lease
// must hold at least three heartbeat intervals, so one lost heartbeat
// never ends a live attempt and a worker that can no longer renew its
// lease has time to stop before the lease ends; and an attempt must
// outlive its heartbeat.
func (p Policy) checkLiveness() error {
	if p.HeartbeatMs*3 > p.LeaseMs {
		return invalidf("policy.heartbeat_ms", "%d ms is more than a third of lease_ms %d ms; a lease must hold at least three heartbeats (heartbeat_ms ≤ lease_ms / 3)", p.HeartbeatMs, p.LeaseMs)
	}
	if p.AttemptTimeoutMs < p.HeartbeatMs {
		return invalidf("policy.attempt_timeout_ms", "%d ms is shorter than heartbeat_ms %d ms", p.AttemptTimeoutMs, p.HeartbeatMs)
	}
	return nil
}

// Merge returns p with each zero field taken from def.
func (p Policy) Merge(def Policy) Policy {
	pick := func(a, b int64) int64 {
		if a != 0 {
			return a
		}
		return b
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = def.MaxAttempts
	}
	p.HeartbeatMs = pick(p.HeartbeatMs, def.HeartbeatMs)
	p.LeaseMs = pick(p.LeaseMs, def.LeaseMs)
	p.StartTimeoutMs = pick(p.StartTimeoutMs, def.StartTimeoutMs)
	p.AttemptTimeoutMs = pick(p.AttemptTimeoutMs, def.AttemptTimeoutMs)
	p.BackoffMs = pick(p.BackoffMs, def.BackoffMs)
	p.BackoffMaxMs = pick(p.BackoffMaxMs, def.BackoffMaxMs)
	p.CancelTimeoutMs = pick(p.CancelTimeoutMs, def.CancelTimeoutMs)
	p.MaxCostNanoUSD = pick(p.MaxCostNanoUSD, def.MaxCostNanoUSD)
	return p
}

// WithDefaults returns p with every zero field set to its documented default.
func (p Policy) WithDefaults() Policy {
	p = p.Merge(Policy{MaxAttempts: 3, HeartbeatMs: 5000, StartTimeoutMs: 60000,
		AttemptTimeoutMs: 900000, BackoffMs: 1000, BackoffMaxMs: 60000, CancelTimeoutMs: DefaultCancelTimeoutMs})
	if p.LeaseMs == 0 {
		p.LeaseMs = 3 * p.HeartbeatMs
	}
	return p
}

// Run is the control plane's record of one run. Timestamps are Unix ms.
type Run struct {
	ID        RunID             `json:"id"`
	Agent     Manifest          `json:"agent"`
	ContextID string            `json:"context_id,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Variables json.RawMessage   `json:"variables,omitempty"`
	// VariablesRef is set instead of Variables in the control plane when
	// the variables are kept in the engine's [PayloadStore] (over
	// [MaxVariablesBytes], or over the launcher's invocation limit). A
	// run read through [Engine.Get] has Variables filled in as well.
	VariablesRef *PayloadRef `json:"variables_ref,omitempty"`
	Policy       Policy      `json:"policy"`
	// ConfigRefs are the run's configuration references
	// ([SubmitRequest.ConfigRefs]): IDs only; each attempt's worker
	// resolves them.
	ConfigRefs []string `json:"config_refs,omitempty"`
	// SealedConfig is the run's inline configuration sealed at rest by the
	// engine's [ConfigSealer] (never plaintext); each launch re-seals it
	// for its attempt. Empty when the run has none.
	SealedConfig json.RawMessage `json:"sealed_config,omitempty"`

	State State `json:"state"`
	// Reason says why the run was rejected, failed or cancelled.
	Reason string `json:"reason,omitempty"`
	// Attempt is the current attempt number: 0 before the first launch is
	// recorded, then 1..Policy.MaxAttempts.
	Attempt  int       `json:"attempt"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// CancelRequested is sticky: once set it is never cleared.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// CancelRequestedMs is when the cancel was first requested, Unix ms:
	// a claimed attempt has until it plus the policy's cancel timeout to
	// stop. 0 on runs stored before the field.
	CancelRequestedMs int64 `json:"cancel_requested_ms,omitempty"`

	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is set instead of Result in the control plane when the
	// worker kept the result in its [PayloadStore] (over
	// [MaxResultBytes]). A run read through [Engine.Get] has Result
	// filled in as well.
	ResultRef *PayloadRef   `json:"result_ref,omitempty"`
	Error     *ErrorMessage `json:"error,omitempty"`
	Interrupt *Interrupt    `json:"interrupt,omitempty"`
	// ResumeInput is the client's answer to an interrupt, handed to the
	// next attempt with the interrupt's checkpoint.
	ResumeInput json.RawMessage `json:"resume_input,omitempty"`
	// ResumeInputRef is set instead of ResumeInput in the control plane
	// when the engine kept the input in its [PayloadStore] (over
	// [MaxVariablesBytes], or over the launcher's invocation limit),
	// object [ResumeInputPayloadName]. A run read through [Engine.Get]
	// has ResumeInput filled in as well.
	ResumeInputRef *PayloadRef `json:"resume_input_ref,omitempty"`

	// LeaseExpiresMs is when the reconciler must look at the run if nothing
	// happens first: the launch deadline of a reservation, the claim
	// deadline of a launched attempt, the lease of a claimed attempt, or
	// the backoff end of a retry. 0 when nothing is due (terminal or
	// interrupted runs).
	LeaseExpiresMs int64 `json:"lease_expires_ms,omitempty"`

	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RequestHash    string `json:"request_hash,omitempty"`
	// TraceParent is the W3C traceparent of the submission (Trace Context,
	// level 1), handed to every attempt's invocation. Empty when the
	// submission was not traced.
	TraceParent string `json:"traceparent,omitempty"`
	// TraceState is the W3C tracestate that came with TraceParent (vendor
	// entries such as "rojo=00f067aa0ba902b7"), handed on with it; empty
	// when there was none.
	TraceState string `json:"tracestate,omitempty"`
	CreatedMs  int64  `json:"created_ms"`
	UpdatedMs  int64  `json:"updated_ms"`
	// Version increases by one with every change of the run record.
	Version int64 `json:"version"`

	// Cost is what the run cost so far, computed from its attempts' usage
	// when the run is shown (see [Pricer]); never stored. Nil when the
	// engine has no Pricer.
	Cost *Cost `json:"cost,omitempty"`

	// Concurrency is the run's concurrency key and limit when its agent
	// has one ([Manifest.Concurrency]); nil otherwise.
	Concurrency *RunConcurrency `json:"concurrency,omitempty"`
	// Queue is where the run waits for a concurrency slot, set by
	// [Engine.Get] while it is queued; never stored.
	Queue *QueuePosition `json:"queue,omitempty"`

	// Steps are the run's completed durable steps, in the order of
	// [SortSteps], as [Client.GetWithSteps] and the API's GET of a run
	// show them (read apart, [ControlPlane.Steps]); never stored on the
	// run record. A secret step shows no result (see [PublicSteps]).
	Steps []Step `json:"steps,omitempty"`
}

// Current returns the run's current attempt, or nil before the first launch.
func (r *Run) Current() *Attempt {
	if r.Attempt == 0 || len(r.Attempts) < r.Attempt {
		return nil
	}
	return &r.Attempts[r.Attempt-1]
}

// Clone returns a deep copy of r.
func (r *Run) Clone() *Run {
	b, err := json.Marshal(r)
	if err != nil {
		panic("sortie: clone run: " + err.Error()) // Run always marshals
	}
	var c Run
	if err := json.Unmarshal(b, &c); err != nil {
		panic("sortie: clone run: " + err.Error())
	}
	return &c
}

// Attempt records one attempt of a run. Timestamps are Unix ms.
type Attempt struct {
	Number   int    `json:"number"`
	LaunchID string `json:"launch_id,omitempty"`
	// Ref is the launcher's handle, set once Start returned.
	Ref        *Ref  `json:"ref,omitempty"`
	LaunchedMs int64 `json:"launched_ms"`
	// StartByMs is when a worker must have claimed the attempt: its launch
	// plus its start timeout (0 on attempts stored before the field:
	// LaunchedMs plus the policy's start timeout).
	StartByMs int64  `json:"start_by_ms,omitempty"`
	ClaimedMs int64  `json:"claimed_ms,omitempty"`
	Owner     string `json:"owner,omitempty"`
	EndedMs   int64  `json:"ended_ms,omitempty"`
	// Outcome is the state the attempt ended in: completed, failed,
	// cancelled, rejected, input-required or auth-required. Empty while live.
	Outcome State         `json:"outcome,omitempty"`
	Error   *ErrorMessage `json:"error,omitempty"`
	Usage   *Usage        `json:"usage,omitempty"`
	// Exit is what the launcher reported of the attempt's compute when it
	// ended before the worker reported an outcome: phase, exit code,
	// signal, the provider's reason. Nil otherwise.
	Exit *Status `json:"exit,omitempty"`
}

// StartDeadlineMs is when a worker must have claimed the attempt, Unix
// ms: StartByMs, or for an attempt stored without it its launch plus the
// policy's start timeout p.
func (a *Attempt) StartDeadlineMs(p Policy) int64 {
	if a.StartByMs != 0 {
		return a.StartByMs
	}
	return a.LaunchedMs + p.StartTimeoutMs
}

// Claimed reports whether a worker claimed the attempt.
func (a *Attempt) Claimed() bool { return a.ClaimedMs != 0 }

// Ended reports whether the attempt has an outcome.
func (a *Attempt) Ended() bool { return a.EndedMs != 0 }

// Usage is what one attempt consumed, for cost per run: the worker's
// compute and requests, and the control plane's capacity and the
// key-management requests of the engine and the worker together.
type Usage struct {
	// DurationMs is the worker's wall time from claim to finish, in ms.
	DurationMs int64 `json:"duration_ms,omitempty"`
	// BilledDurationMs is the compute service's billed duration, in ms
	// (Lambda: the handler's time rounded up to 1 ms; Cloud Run: rounded
	// up to 100 ms).
	BilledDurationMs int64 `json:"billed_duration_ms,omitempty"`
	// MemoryMB is the memory size of the execution environment, in MB
	// (Lambda) or MiB (Cloud Run).
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// VCPU is the vCPUs allocated (Cloud Run), in CPUs.
	VCPU float64 `json:"vcpu,omitempty"`
	// Arch is the execution environment's architecture: "arm64" or
	// "x86_64" (Lambda prices them apart). Empty when unknown.
	Arch string `json:"arch,omitempty"`
	// Billing is how the compute service bills the attempt, where it has
	// several ways: Cloud Run "request" (request-based), "instance"
	// (instance-based) or "job". Empty otherwise.
	Billing string `json:"billing,omitempty"`
	// Requests counts the compute service's billed invocations (a Lambda
	// invocation, a request to a request-billed Cloud Run service).
	Requests int64 `json:"requests,omitempty"`
	// ReadUnits and WriteUnits are control-plane capacity units consumed
	// (DynamoDB read and write request units, table and indexes).
	ReadUnits  float64 `json:"read_units,omitempty"`
	WriteUnits float64 `json:"write_units,omitempty"`
	// KMSRequests counts key-management calls made for the attempt, the
	// engine's seals and the worker's opens together.
	KMSRequests int64 `json:"kms_requests,omitempty"`
	// OffloadedBytes counts payload bytes moved to object storage.
	OffloadedBytes int64 `json:"offloaded_bytes,omitempty"`
	// PayloadWrites and PayloadReads count object-storage requests for
	// the attempt's payloads, failed ones included, as the stores bill
	// them. Writes (PUT of an object under runs/RUN_ID/) are the worker's
	// (result, interrupt checkpoint, steps kept by reference) and the
	// engine's own stores of the run's variables (counted on attempt 1)
	// and of a resume input (on the attempt that resumes); reads (GET) are
	// the worker's. The engine's reads for clients ([Engine.Get]) are not
	// counted.
	PayloadWrites int64 `json:"payload_writes,omitempty"`
	PayloadReads  int64 `json:"payload_reads,omitempty"`
	// PayloadStore is the kind of store those requests went to, which
	// prices them: "s3", "gs" or "file" ([PayloadStoreKind]). Empty when
	// the attempt made none.
	PayloadStore string `json:"payload_store,omitempty"`
}
