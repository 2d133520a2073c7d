package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
)

// Worker executes attempts with the handlers of its Registry ("go:NAME"
// runtimes) and the host-pinned commands of Exec ("exec:ID" runtimes).
type Worker struct {
	// Registry holds the "go:NAME" handlers. Optional; without it no go
	// runtime is known.
	Registry *Registry
	// Exec holds the "exec:ID" runtimes, keyed by ID; see
	// [LoadExecRuntimes]. Optional; without it no exec runtime is known.
	Exec map[string]ExecSpec
	// Owner names this worker in its logs; pass it to
	// [NewControlPlaneReporter] to name it in claims too. Optional;
	// defaults to "HOSTNAME/PID".
	Owner string
	// Logger receives the worker's and handlers' logs. Optional; defaults
	// to slog.Default() (stderr).
	Logger *slog.Logger
	// InlineConfig turns on inline configuration. Optional; nil (the
	// default) turns it off: an attempt whose invocation carries sealed
	// configuration is rejected.
	InlineConfig *InlineConfig
	// ConfigRefs is the host's allowlist of configuration references,
	// through which each attempt resolves its invocation's
	// [sortie.Invocation.ConfigRefs] when it executes (never before,
	// never cached across attempts): each reference sets one variable
	// that handlers see with the inline configuration ([Call.Config], an
	// exec command's environment). Optional; without it an attempt naming
	// references is rejected.
	ConfigRefs *ConfigRefs
	// Destinations is the destination policy of [Call.HTTPClient], the
	// client handlers use for outbound calls made on a run's behalf. The
	// first Execute with a policy builds its client, which every worker
	// (and copy of one) with the same policy shares; later changes to the
	// policy are not seen. Optional; defaults to the zero
	// [destination.Policy], which allows no destination: a worker makes no
	// outbound call its host did not allow (destination.PublicHTTPS is
	// HTTPS to any public address).
	Destinations *destination.Policy
	// EventWindow is how long an attempt's unsent event waits for more
	// to join its batch: the reporter gets events in batches of up to
	// sortie.MaxEventsPerAppend, sent when the window of the batch's first
	// event ends, when a batch is full, and before every heartbeat and
	// the finish (result, error, interrupt, also after a cancel). A worker
	// that crashes loses at most the events of its last window. Optional;
	// defaults to [DefaultEventWindow]; negative sends each event before
	// [Call.Emit] returns.
	EventWindow time.Duration
	// StepSealer seals the results of secret steps ([StepOptions.Secret])
	// before they are recorded, and opens them for later attempts.
	// Optional; without it a secret step fails and a run holding one
	// cannot be continued here.
	StepSealer StepSealer
	// Models is the worker's model policy: an attempt whose run names a
	// profile outside it is rejected before its handler starts, and
	// [Call.Model] resolves profiles through it. Optional; nil allows
	// every model (the engine's policy was checked at submit).
	Models *sortie.ModelPolicy
	// AuthorizeTool decides each tool call a handler asks for
	// ([Call.AuthorizeTool]; an exec session worker's authorize
	// message): nil allows it, an error refuses it. It runs on the host
	// that launched the attempt, with the run and attempt. Optional;
	// without it (worker mode's default) every tool call is refused.
	AuthorizeTool AuthorizeToolFunc
	// AuthorizeConnection decides each connection a handler asks for
	// ([Call.Connect]), as AuthorizeTool does. Optional; without it
	// every connection is refused.
	AuthorizeConnection AuthorizeConnectionFunc
	// Payloads is where the worker reads variables a run keeps by
	// reference ([sortie.Invocation.VariablesRef]) and keeps results over
	// [sortie.MaxResultBytes]; the engine must have the same store
	// ([sortie.EngineOptions.Payloads]). Optional; without it such a run
	// fails with error type "payload" and such a result with error type
	// "output".
	Payloads sortie.PayloadStore
	// PayloadURLs is the keyring that opens an invocation's payload URLs
	// ([sortie.Invocation.SealedPayloadURLs]) and seals its payloads: the
	// attempt then uses a store over them (payload/sealed). Optional.
	PayloadURLs PayloadURLOpener
	// Webhooks enables webhook steps ([Call.Webhook]) and says how they
	// go: through which destination policy, signed or not, authorized by
	// which hook. Optional; nil (worker mode's default) installs no
	// webhook executor: every webhook step is refused.
	Webhooks *WebhookExecutor
	// Warm maps runtimes to pools of warm worker processes that run them
	// ([SessionVersion]): key "go" runs every "go:NAME" handler of the
	// Registry in the pool's processes (`sortie worker --session`, the
	// same handlers) instead of in this process, and key "exec:ID" runs
	// that exec runtime, whose [ExecSpec.Protocol] is SessionVersion (see
	// [NewPools]). The worker still claims, heartbeats and reports each
	// attempt itself. Optional; without it go handlers run in this
	// process and exec commands start once per attempt.
	Warm map[string]*Pool
}

// Causes of a handler context's end.
var (
	errCancelRequested = errors.New("the run's cancel was requested")
	errClaimLost       = errors.New("the claim is no longer live")
	errDeadline        = errors.New("the attempt's deadline is near")
	errFenced          = errors.New("the lease could not be renewed before it ends")
)

// handlerStopGrace is how long a Go handler has to return after its
// context ended before the worker reports without it.
const handlerStopGrace = 2 * time.Second

// maxDeadlineMargin bounds the time kept between the handler's deadline
// and the attempt's, for stopping and reporting.
const maxDeadlineMargin = 5 * time.Second

// runner executes an attempt and returns its outcome. margin is the time
// between the context's deadline and the attempt's.
type runner func(ctx context.Context, c *Call, margin time.Duration) sortie.Outcome

// Execute runs one attempt of inv and reports it to rep: Claim, then the
// runtime's handler with heartbeats every inv.HeartbeatMs, then Finish with
// the outcome (carrying Usage.DurationMs, claim to finish). It returns the
// outcome it reported, and an error when Finish failed.
//
// It returns an error without executing anything or finishing when inv or
// the worker's Destinations is invalid ([*sortie.ValidationError], the
// latter naming a "destinations." field) or the claim fails (wrapping
// sortie.ErrConflict, ErrCancelRequested or ErrTerminal: a duplicate
// delivery). An unknown runtime finishes with error type "rejected", and
// so does inline configuration on a worker without [InlineConfig] or one
// that sets a variable outside its allowlist; configuration the Opener
// cannot open finishes with error type "config" (retryable when the error
// wraps sortie.ErrUnavailable). Usage.KMSRequests counts the Opener's
// key-management requests.
//
// The handler's context ends when a heartbeat sees the run's cancel request
// (outcome: error type "cancelled"), when the claim is lost (error type
// "claim_lost"), when the lease could not be renewed in time (fencing, see
// [FenceMargin]: error type "claim_lost", retryable), at inv.DeadlineMs
// less a margin of min(5 s, 10% of the remaining time) (error type
// "deadline", retryable), and when ctx ends (error type "terminated",
// retryable). An attempt already past that deadline when claimed finishes
// with error type "deadline" without starting its handler. A handler
// panic finishes with error type "panic", not retryable.
//
// Execute traces the attempt (see [TracerName]): a span "sortie.attempt",
// the child of ctx's span when it belongs to inv.TraceParent's trace (an
// in-process launch) and of inv.TraceParent otherwise, with children
// "sortie.claim" and "sortie.finish". The handler's context carries the
// attempt span, and an exec runtime gets its traceparent in TRACEPARENT
// (and tracestate in TRACESTATE). A span of ctx from another trace is
// never the attempt's parent: an attempt's trace comes from its
// invocation, so a warm worker cannot carry one run's trace into another.
func (w *Worker) Execute(ctx context.Context, inv *sortie.Invocation, rep Reporter) (o sortie.Outcome, err error) {
	o, _, err = w.execute(ctx, inv, rep, nil)
	return o, err
}

// opened is an attempt's configuration as a session's invoke frame
// carries it: opened and resolved by the host.
type opened struct{ cfg map[string]string }

// execute is Execute; pre, when not nil, is the attempt's configuration
// (a session worker's), used instead of opening and resolving it. It also
// returns the attempt.
func (w *Worker) execute(ctx context.Context, inv *sortie.Invocation, rep Reporter, pre *opened) (o sortie.Outcome, a *attempt, err error) {
	if err := inv.Validate(); err != nil {
		return sortie.Outcome{}, nil, err
	}
	client, err := httpClientFor(w.Destinations)
	if err != nil {
		return sortie.Outcome{}, nil, err
	}
	hooks, err := newWebhookRunner(w.Webhooks, w.Destinations)
	if err != nil {
		return sortie.Outcome{}, nil, err
	}
	if pre != nil {
		// The host traces the attempt, its claim and its finish; the
		// handler's spans go under the host's attempt span.
		ctx = attemptParent(ctx, inv)
	} else {
		var span trace.Span
		ctx, span = startAttemptSpan(ctx, inv)
		defer func() { endAttemptSpan(span, o, err) }()
	}
	log := w.logger().With("run", string(inv.RunID), "attempt", inv.Attempt, "owner", w.owner())
	claimed := time.Now()
	if err := claim(ctx, rep, pre == nil); err != nil {
		log.Info("claim refused; nothing executed", "err", err)
		return sortie.Outcome{}, nil, fmt.Errorf("worker: claim refused, nothing executed: %w", err)
	}
	a = &attempt{inv: inv, log: log, client: client, renewedAt: claimed, sealer: w.StepSealer, w: w, webhooks: hooks}
	if pre != nil {
		a.cfg, a.session = pre.cfg, true
	}
	a.out = &sender{rep: rep, ctx: context.WithoutCancel(ctx), window: w.eventWindow()}
	o, kmsRequests := w.run(ctx, a)
	o, offloaded := w.storeResult(ctx, a, a.mask.outcome(o))
	if err := o.Validate(); err != nil {
		o = errorOutcome(errTypeOutput, "invalid outcome: "+err.Error(), false)
	}
	o.Usage = &sortie.Usage{DurationMs: time.Since(claimed).Milliseconds(), KMSRequests: int64(kmsRequests + a.payloadKMS), OffloadedBytes: offloaded}
	a.payloadUsage(o.Usage, o)
	if a.call != nil && a.call.exit != nil {
		return o, a, a.computeEnded(*a.call.exit)
	}
	if err := a.finish(ctx, o); err != nil {
		log.Error("finish failed", "err", err)
		return o, a, fmt.Errorf("worker: finish run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	return o, a, nil
}

func (w *Worker) eventWindow() time.Duration {
	if w.EventWindow == 0 {
		return DefaultEventWindow
	}
	return w.EventWindow
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

func (w *Worker) owner() string {
	if w.Owner != "" {
		return w.Owner
	}
	return defaultOwner()
}

func defaultOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// run opens the attempt's inline configuration, resolves its
// configuration references (unless a session's frame brought them) and
// runs its runtime. It returns the outcome and the key-management
// requests made. An attempt already past its deadline starts nothing.
func (w *Worker) run(ctx context.Context, a *attempt) (sortie.Outcome, int) {
	if end, _ := handlerDeadline(ctx, a.inv.DeadlineMs, time.Now()); !end.After(time.Now()) {
		a.log.Warn("the attempt's deadline has passed; nothing executed", "deadline_ms", a.inv.DeadlineMs)
		return errorOutcome(sortie.ErrorTypeDeadline, "the attempt's deadline had passed when its worker claimed it; the agent was not started", true), 0
	}
	var kmsRequests int
	if !a.session {
		cfg, n, refused := w.configure(ctx, a.inv)
		if kmsRequests = n; refused != nil {
			return *refused, kmsRequests
		}
		// cfg is never written again: an abandoned handler may still read it.
		a.cfg = cfg
	}
	a.masking()
	r, ok := w.resolve(a.inv.Agent.Runtime)
	if !ok {
		return errorOutcome(sortie.ErrorTypeRejected, "no runtime "+a.inv.Agent.Runtime+" on this worker host", false), kmsRequests
	}
	if refused := w.checkModels(a.inv); refused != nil {
		return *refused, kmsRequests
	}
	if refused := w.loadVariables(ctx, a); refused != nil {
		return *refused, kmsRequests
	}
	if refused := w.loadResume(ctx, a); refused != nil {
		return *refused, kmsRequests
	}
	steps, refused := a.loadSteps(ctx)
	if refused != nil {
		return *refused, kmsRequests
	}
	a.steps = newJournal(steps, a.recordStep)
	return a.execute(ctx, r), kmsRequests
}

// resolve finds the runner of a runtime reference on this host.
func (w *Worker) resolve(ref string) (runner, bool) {
	kind, name, _ := strings.Cut(ref, ":")
	switch kind {
	case "go":
		h, ok := w.Registry.Lookup(name)
		if p := w.Warm["go"]; ok && p != nil {
			return sessionRunner(ref, p, true), true
		} else if ok {
			return goRunner(h), true
		}
	case "exec":
		spec, ok := w.Exec[name]
		if p := w.Warm[ref]; ok && p != nil {
			return sessionRunner(ref, p, false), true
		} else if ok && len(spec.Command) > 0 && spec.Protocol == "" {
			return tracedExecRunner(name, spec), true
		}
	}
	return nil, false
}

// configure opens the attempt's inline configuration and resolves its
// configuration references. The map holds every secret value of the
// attempt, inline and referenced: whatever keeps them out of the
// attempt's events and results (the masking of echoed values) reads them
// here.
func (w *Worker) configure(ctx context.Context, inv *sortie.Invocation) (map[string]string, int, *sortie.Outcome) {
	cfg, kmsRequests, refused := w.openConfig(ctx, inv)
	if refused != nil {
		return nil, kmsRequests, refused
	}
	refs, refused := w.resolveRefs(ctx, inv)
	if refused == nil {
		cfg, refused = mergeRefs(cfg, refs)
	}
	if refused != nil {
		clear(cfg)
		return nil, kmsRequests, refused
	}
	return cfg, kmsRequests, nil
}

// execute runs r under the handler context, heartbeating meanwhile.
func (a *attempt) execute(ctx context.Context, r runner) sortie.Outcome {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.cancel = cancel
	a.out.lost = func() { cancel(errClaimLost) }
	deadline, margin := handlerDeadline(ctx, a.inv.DeadlineMs, time.Now())
	hctx, stop := context.WithDeadlineCause(hctx, deadline, errDeadline)
	defer stop()
	done := make(chan struct{})
	beating := a.heartbeats(done)
	a.call = &Call{inv: a.inv, cfg: a.cfg, log: a.log, client: a.client, out: a.out, mask: a.mask, steps: a.steps, models: a.w.Models,
		hooks: authHooks{tool: a.w.AuthorizeTool, conn: a.w.AuthorizeConnection}, webhooks: a.webhooks}
	o := r(hctx, a.call, margin)
	close(done)
	<-beating
	return a.settle(ctx, hctx, o)
}

// handlerDeadline returns the handler's deadline: the attempt's (or ctx's,
// when earlier) less min(5 s, 10% of the remaining time).
func handlerDeadline(ctx context.Context, deadlineMs int64, now time.Time) (time.Time, time.Duration) {
	end := time.UnixMilli(deadlineMs)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	margin := max(0, min(maxDeadlineMargin, end.Sub(now)/10))
	return end.Add(-margin), margin
}

// settle decides the outcome once the runner returned: a cancel request
// wins; an error after the handler context ended is reported as its cause.
func (a *attempt) settle(ctx, hctx context.Context, o sortie.Outcome) sortie.Outcome {
	if a.cancelRequested.Load() || errors.Is(context.Cause(hctx), errCancelRequested) {
		return errorOutcome(sortie.ErrorTypeCancelled, "the run's cancel was requested; the handler stopped", false)
	}
	if o.Error == nil || hctx.Err() == nil {
		return o
	}
	cause := context.Cause(hctx)
	switch {
	case errors.Is(cause, errClaimLost):
		return errorOutcome(errTypeClaimLost, "the attempt's claim was lost; the handler stopped", true)
	case errors.Is(cause, errFenced):
		return errorOutcome(errTypeClaimLost, "the worker could not renew its lease; it stopped the handler before the lease ended", true)
	case errors.Is(cause, errDeadline):
		return errorOutcome(sortie.ErrorTypeDeadline, "the attempt's deadline came first: "+o.Error.Message, true)
	case ctx.Err() != nil && o.Error.Type == sortie.ErrorTypeCancelled:
		// A warm worker process stops its attempt the way a cancel does;
		// here nobody cancelled the run: its host stopped the worker.
		msg := "the host stopped the worker before the attempt ended"
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
			msg += ": " + cause.Error()
		}
		return errorOutcome(errTypeTerminated, msg, true)
	case ctx.Err() != nil:
		return errorOutcome(errTypeTerminated, fmt.Sprintf("the worker was stopped (%v): %s", context.Cause(ctx), o.Error.Message), true)
	}
	return o
}

// computeEnded ends an attempt whose warm worker process died: its events
// are sent, nothing else, and the error says how the process ended.
func (a *attempt) computeEnded(st sortie.Status) error {
	if err := a.out.abandon(); err != nil {
		a.log.Warn("send the events of an attempt whose worker process died", "err", err)
	}
	a.log.Warn("the worker process running the attempt ended without a word", "status", st.Reason)
	return &ComputeEndedError{Status: st}
}
