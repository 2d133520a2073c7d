package sortie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ExecutionEngine is what a [Client] drives: an [Engine] in this process, or
// a remote host through an HTTP transport. Errors wrap the sentinels.
type ExecutionEngine interface {
	Submit(ctx context.Context, req *SubmitRequest) (*Run, error)
	Get(ctx context.Context, id RunID) (*Run, error)
	List(ctx context.Context, q ListQuery) (*RunPage, error)
	Events(ctx context.Context, id RunID, after Cursor, limit int) ([]Event, error)
	Cancel(ctx context.Context, id RunID, reason string) (*Run, error)
	Resume(ctx context.Context, id RunID, input json.RawMessage) (*Run, error)
	Delete(ctx context.Context, id RunID) error
}

// LocalEngine is an optional [ExecutionEngine] capability: an engine in
// this process ([*Engine]) returns its control plane, so code given only an
// ExecutionEngine (the A2A handler, remote/runs) reaches the run's push
// configurations ([PushStore]) directly. An engine of a remote host has
// none.
type LocalEngine interface {
	ExecutionEngine
	ControlPlane() ControlPlane
}

// Watcher is an optional [ExecutionEngine] capability: a wake-up after each
// change of a run, so followers need not poll. See [Notifier].
type Watcher interface {
	Watch(id RunID) (<-chan struct{}, func())
}

// Sealer seals an invocation's secret-bearing configuration before its
// launch is recorded (envelope encryption bound to run ID and attempt).
// The engine calls Seal with inv.SealedConfig set to the run's copy at
// rest ([Run.SealedConfig], made by [ConfigSealer.SealConfig]), which Seal
// replaces with the attempt's envelope; an invocation without
// configuration must be left unchanged.
type Sealer interface {
	Seal(ctx context.Context, inv *Invocation) error
}

// ReportIssuer mints where one attempt's worker reports. IssueReport is
// called once per launch with the invocation complete but for Report
// (DeadlineMs is final); an error fails the attempt like a seal error.
type ReportIssuer interface {
	IssueReport(inv *Invocation) (Report, error)
}

// EngineOptions configures an [Engine]. A nil *EngineOptions means the defaults.
type EngineOptions struct {
	// OwnRunsOnly keeps the engine of a short-lived process, whose warm
	// workers end with it, from launching runs it did not submit: a
	// submission over its concurrency limit is admitted only when it is
	// first in its queue (older queued runs wait for a long-lived engine),
	// and [Engine.ReconcileOne] looks after one run. The CLI's run, follow
	// and resume set it. Optional; false admits every queued run.
	OwnRunsOnly bool
	// DefaultPolicy fills policy fields neither the request nor the agent
	// set. Optional; defaults to [Policy.WithDefaults].
	DefaultPolicy Policy
	// IdempotencyTTL is how long an idempotency key holds. Optional;
	// defaults to 24 h.
	IdempotencyTTL time.Duration
	// Report tells workers where to report. Optional; defaults to the
	// control plane their host configured. Ignored when ReportIssuer is set.
	Report Report
	// ReportIssuer mints each attempt's report (a callback URL and a
	// credential scoped to the run, attempt and launch). Optional.
	ReportIssuer ReportIssuer
	// Sealer seals inline configuration; when it is also a
	// [ConfigSealer], submissions may carry configuration. Optional;
	// without it inline configuration is off.
	Sealer Sealer
	// ConfigRefs is the host's allowlist of configuration references,
	// which submissions' [SubmitRequest.ConfigRefs] are checked against.
	// Optional; without it a submission naming any reference is refused.
	ConfigRefs ConfigRefChecker
	// Logger receives the engine's logs. Optional; defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Optional; defaults to time.Now.
	Now func() time.Time
	// LaunchTimeout bounds each call of the launcher's Start. Optional;
	// defaults to 60 s.
	LaunchTimeout time.Duration
	// CloseGrace is how long Close waits for the launches, provider
	// cancels and exit reports in flight before it cancels their contexts.
	// Optional; defaults to 10 s.
	CloseGrace time.Duration
	// DescribeInterval is how often the reconciler asks a [Describer]
	// launcher about an attempt that was launched but not claimed (each
	// look is one conditional write, Defer). Optional; defaults to 5 s.
	DescribeInterval time.Duration
	// Models is the host's model policy, which every run's model
	// profiles (the agent's and the request's) must pass at submit: a
	// refused one is a [*ValidationError] naming its field
	// ("models.NAME.model", "agent.models.NAME.options"). Optional; nil
	// allows every model.
	Models *ModelPolicy
	// Payloads keeps payloads over their inline limits: variables over
	// [MaxVariablesBytes] (or over the launcher's invocation limit) up to
	// the store's per-payload maximum, which the engine stores at submit
	// and its workers read by reference, and results workers stored.
	// [Engine.Get] reads them back. Optional; without it such a
	// submission is refused naming the inline limit. Its workers need
	// the same store (functions.Worker.Payloads).
	Payloads PayloadStore
	// ObjectDeleter deletes a run's payload objects by name, before
	// [Engine.Delete] and [Engine.Expire] delete its record: for an
	// engine that holds no store but signs its workers' URLs (the Lambda
	// reconciler: payload/sealed's Deleter). Optional; without it an
	// engine without Payloads leaves a deleted run's objects to the
	// bucket's lifecycle rule and the hosts' payload sweep.
	ObjectDeleter RunObjectDeleter
	// Pricer sets [Run.Cost] on every run the engine returns (Submit,
	// Get, List, Cancel, Resume). Optional; without it runs carry no cost.
	Pricer Pricer
	// Inputs checks each submission's variables against its agent's
	// [Manifest.InputSchema] (package inputschema's Checker). Optional;
	// without it input schemas are not checked at submit, and the
	// agent's handler alone checks its variables.
	Inputs InputChecker
}

// Engine combines a [ControlPlane] and a [Launcher]: it reserves runs,
// records each launch before starting it, cancels, resumes and reconciles.
// It implements [ExecutionEngine].
type Engine struct {
	cp       ControlPlane
	launcher Launcher
	agents   AgentCatalog
	opts     EngineOptions
	log      *slog.Logger
	life     lifecycle
}

var _ LocalEngine = (*Engine)(nil)

// NewEngine returns an engine over cp and l that resolves agent names with
// agents. opts may be nil.
func NewEngine(cp ControlPlane, l Launcher, agents AgentCatalog, opts *EngineOptions) *Engine {
	e := &Engine{cp: cp, launcher: l, agents: agents}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.IdempotencyTTL == 0 {
		e.opts.IdempotencyTTL = 24 * time.Hour
	}
	if e.opts.Report.Mode == "" {
		e.opts.Report.Mode = ReportControlPlane
	}
	e.opts.LaunchTimeout = cmpOr(e.opts.LaunchTimeout, defaultLaunchTimeout)
	e.opts.CloseGrace = cmpOr(e.opts.CloseGrace, defaultCloseGrace)
	e.opts.DescribeInterval = cmpOr(e.opts.DescribeInterval, defaultDescribeInterval)
	e.log = e.opts.Logger
	if e.log == nil {
		e.log = slog.Default()
	}
	e.life.init()
	if w, ok := l.(ExitWatcher); ok {
		e.life.unwatch = w.WatchExits(e.exited)
	}
	return e
}

func (e *Engine) now() time.Time {
	if e.opts.Now != nil {
		return e.opts.Now()
	}
	return time.Now()
}

func (e *Engine) nowMs() int64 { return e.now().UnixMilli() }

// ControlPlane returns the engine's control plane.
func (e *Engine) ControlPlane() ControlPlane { return e.cp }

// Submit validates req, reserves the run (or returns the run an earlier
// submission with the same idempotency key made) and launches attempt 1. It
// returns a [*ValidationError] for bad input (also an invocation the
// launcher could not carry, naming its largest variable and the limit;
// see [InvocationLimiter]), ErrIdempotencyConflict for a reused key with
// another request, an [*AgentBudgetError] (ErrBudgetExhausted) when the
// agent's budget for the period is spent, and ErrClosed after Close. A run
// of an agent with a concurrency limit is reserved queued and launched
// when a slot is free (see [Concurrency]).
func (e *Engine) Submit(ctx context.Context, req *SubmitRequest) (*Run, error) {
	run, _, err := e.SubmitCreated(ctx, req)
	return run, err
}

// SubmitCreated is [Engine.Submit] that also reports whether this call
// created the run (false: an earlier submission with the same idempotency
// key did, and its run is returned). Attempt 1 is sealed first and its
// launch recorded with the reservation, in one control-plane write.
func (e *Engine) SubmitCreated(ctx context.Context, req *SubmitRequest) (*Run, bool, error) {
	if err := e.life.acquire("submit"); err != nil {
		return nil, false, err
	}
	defer e.life.release()
	ctx, span := startSpan(ctx, "sortie.submit", "", "")
	defer span.End()
	meter := &Meter{}
	run, err := e.newRun(WithMeter(ctx, meter), req)
	if err != nil {
		return nil, false, endSpan(span, err)
	}
	res := &Reservation{Run: run, TTLMs: e.opts.IdempotencyTTL.Milliseconds(), NowMs: e.nowMs()}
	res.SpendLimit = spendLimitOf(run.Agent, res.NowMs)
	if run.Concurrency != nil {
		run, created, err := e.submitQueued(ctx, res)
		return e.priced(run), created, endSpan(span, err)
	}
	inv := e.invocation(run, 1, NewLaunchID())
	sealErr := e.seal(WithMeter(ctx, meter), inv)
	if sealErr == nil {
		l := e.launchOf(run, inv)
		res.LaunchID, res.StartTimeoutMs, res.CheckMs, res.NowMs = l.LaunchID, l.StartTimeoutMs, l.CheckMs, l.NowMs
		res.Usage = meter.Usage()
	}
	newID := run
	run, created, err := e.cp.Reserve(ctx, res)
	if err != nil || !created {
		e.dropPayloads(ctx, newID)
	}
	if err != nil {
		return nil, false, endSpan(span, err)
	}
	setRunAttrs(span, run)
	if !created {
		return e.priced(run), false, nil
	}
	countSubmitted(ctx, run)
	switch {
	case sealErr == nil:
		run, err = e.started(ctx, run, inv)
	case errors.Is(sealErr, ErrUnavailable):
		// Transient: the run stays reserved and the reconciler launches it
		// once its lease expires; the submission itself succeeded.
		e.log.Warn("launch deferred", "run", run.ID, "attempt", inv.Attempt, "err", sealErr)
	default:
		run, err = e.failLaunch(ctx, inv, sealErr)
	}
	return e.priced(run), true, endSpan(span, err)
}

// priced sets run's cost with the engine's Pricer, if any, and returns it.
func (e *Engine) priced(run *Run) *Run {
	if run != nil && e.opts.Pricer != nil {
		run.Cost = e.opts.Pricer.Price(run)
	}
	return run
}

// launch records and starts the run's next attempt. A lost race (another
// process launched it first) returns the current run without error.
func (e *Engine) launch(ctx context.Context, run *Run) (*Run, error) {
	inv := e.invocation(run, run.Attempt+1, NewLaunchID())
	if err := e.withSteps(ctx, inv); err != nil {
		// The reconciler launches it once its lease expires.
		e.log.Warn("launch deferred", "run", run.ID, "attempt", inv.Attempt, "err", err)
		return run, nil
	}
	meter, ok := ctx.Value(meterKey{}).(*Meter) // a resume's, which counted the input it stored
	if !ok {
		meter = &Meter{}
	}
	if err := e.seal(WithMeter(ctx, meter), inv); errors.Is(err, ErrUnavailable) {
		// Transient: the run stays reserved and the reconciler launches it
		// once its lease expires; the submission itself succeeded.
		e.log.Warn("launch deferred", "run", run.ID, "attempt", inv.Attempt, "err", err)
		return run, nil
	} else if err != nil {
		return e.failLaunch(ctx, inv, err)
	}
	l := e.launchOf(run, inv)
	l.Usage = meter.Usage()
	rec, err := e.cp.RecordLaunch(ctx, l)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrTerminal) || errors.Is(err, ErrCancelRequested) {
		return e.cp.Get(ctx, run.ID)
	} else if err != nil {
		return nil, err
	}
	return e.started(ctx, rec, inv)
}

// started issues the report of inv, whose launch rec records, and starts it.
func (e *Engine) started(ctx context.Context, rec *Run, inv *Invocation) (*Run, error) {
	inv.DeadlineMs = rec.Current().LaunchedMs + rec.Policy.AttemptTimeoutMs
	if e.opts.ReportIssuer != nil {
		rep, err := e.opts.ReportIssuer.IssueReport(inv)
		if err != nil {
			return e.finishLaunch(ctx, inv, ErrorTypeLaunch, fmt.Errorf("issue report: %w", err))
		}
		inv.Report = rep
	}
	e.start(inv)
	return rec, nil
}

// launchOf is what RecordLaunch records for inv: the start timeout grows
// by a [Queuer]'s queue age, and a [Describer] gets its first look at the
// unclaimed attempt after DescribeInterval.
func (e *Engine) launchOf(run *Run, inv *Invocation) Launch {
	now := e.nowMs()
	l := Launch{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, NowMs: now}
	if q, ok := e.launcher.(Queuer); ok {
		l.StartTimeoutMs = run.Policy.StartTimeoutMs + q.MaxQueueMs()
	}
	if _, ok := e.launcher.(Describer); ok {
		l.CheckMs = now + e.opts.DescribeInterval.Milliseconds()
	}
	return l
}

// seal seals the invocation's configuration for its attempt.
func (e *Engine) seal(ctx context.Context, inv *Invocation) error {
	if e.opts.Sealer == nil {
		if len(inv.SealedConfig) > 0 {
			return fmt.Errorf("seal run %s: it carries sealed configuration and this engine has no Sealer to re-seal it", inv.RunID)
		}
		return nil
	}
	if err := e.opts.Sealer.Seal(ctx, inv); err != nil {
		return fmt.Errorf("seal run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	return nil
}

// failLaunch ends an attempt that cannot be sealed (a key removed from the
// ring, no sealer): it records the launch and finishes it at once with a
// permanent error of type "seal", so the run fails with the reason instead
// of being relaunched forever.
func (e *Engine) failLaunch(ctx context.Context, inv *Invocation, cause error) (*Run, error) {
	e.log.Error("launch refused", "run", inv.RunID, "attempt", inv.Attempt, "err", cause)
	l := Launch{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, NowMs: e.nowMs()}
	if _, err := e.cp.RecordLaunch(ctx, l); err != nil {
		return e.cp.Get(ctx, inv.RunID)
	}
	return e.finishLaunch(ctx, inv, ErrorTypeSeal, cause)
}

// finishLaunch ends a recorded attempt at once with a permanent error.
func (e *Engine) finishLaunch(ctx context.Context, inv *Invocation, typ string, cause error) (*Run, error) {
	msg := &ErrorMessage{Type: typ, Message: cause.Error()}
	return e.cp.Finish(ctx, Finish{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Outcome: Outcome{Error: msg}, NowMs: e.nowMs()})
}

func (e *Engine) invocation(run *Run, attempt int, launchID string) *Invocation {
	inv := &Invocation{
		Version: InvocationVersion, RunID: run.ID, Attempt: attempt, LaunchID: launchID,
		Agent: run.Agent, Variables: run.Variables, VariablesRef: run.VariablesRef,
		ConfigRefs: run.ConfigRefs, SealedConfig: run.SealedConfig,
		DeadlineMs:  e.nowMs() + run.Policy.AttemptTimeoutMs,
		HeartbeatMs: run.Policy.HeartbeatMs, LeaseMs: run.Policy.LeaseMs,
		Report: e.opts.Report, TraceParent: run.TraceParent, TraceState: run.TraceState,
	}
	if run.State == StateWorking && run.Interrupt != nil {
		inv.Resume = &Resume{Checkpoint: run.Interrupt.Checkpoint, CheckpointRef: run.Interrupt.CheckpointRef,
			Input: run.ResumeInput, InputRef: run.ResumeInputRef}
	}
	return inv
}

// Get returns the run, with variables and result kept in the payload
// store read back ([EngineOptions.Payloads]); ErrNotFound for an unknown
// ID, [ErrPayloadIntegrity] for a stored payload that is not the one the
// run references.
func (e *Engine) Get(ctx context.Context, id RunID) (*Run, error) {
	run, err := e.GetStored(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.inlined(ctx, run)
}

// List returns a page of runs; see [ControlPlane.List].
func (e *Engine) List(ctx context.Context, q ListQuery) (*RunPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	page, err := e.cp.List(ctx, q)
	if err == nil {
		for _, r := range page.Runs {
			e.priced(r)
		}
	}
	return page, err
}

// Events returns up to limit events after the cursor; see [ControlPlane.Events].
func (e *Engine) Events(ctx context.Context, id RunID, after Cursor, limit int) ([]Event, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	return e.cp.Events(ctx, id, after, limit)
}

// Watch implements [Watcher] when the control plane is a [Notifier].
func (e *Engine) Watch(id RunID) (<-chan struct{}, func()) {
	if n, ok := e.cp.(Notifier); ok {
		return n.Subscribe(id)
	}
	return nil, func() {}
}
