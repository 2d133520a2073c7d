package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// Modes of the function ([EnvMode]).
const (
	// ModeWorker executes invocations. The default.
	ModeWorker = "worker"
	// ModeReconciler takes on-failure destination records and scheduled events.
	ModeReconciler = "reconciler"
	// ModeTrigger routes cloud events (EventBridge, S3, SQS, SNS) to runs
	// by the rules in [EnvTriggerRules]; see [Env.TriggerHandler].
	ModeTrigger = "trigger"
)

// Statuses of a [Response].
const (
	// StatusFinished: the attempt ran and its outcome was stored.
	StatusFinished = "finished"
	// StatusNotExecuted: the claim was refused (a duplicate delivery, a
	// superseded launch, a cancelled or terminal run); nothing ran.
	StatusNotExecuted = "not-executed"
	// StatusRecorded: the reconciler ended the attempt a failure record named.
	StatusRecorded = "recorded"
	// StatusIgnored: the record's attempt had ended or was superseded.
	StatusIgnored = "ignored"
	// StatusReconciled: a scheduled reconcile ran.
	StatusReconciled = "reconciled"
)

// Response is what the handler returns (Lambda logs it; async callers do
// not see it).
type Response struct {
	Status  string       `json:"status"`
	RunID   sortie.RunID `json:"run_id,omitempty"`
	Attempt int          `json:"attempt,omitempty"`
	Outcome sortie.State `json:"outcome,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	// Reconciled counts the runs a scheduled reconcile acted on.
	Reconciled int `json:"reconciled,omitempty"`
	// Expired counts the runs a scheduled reconcile deleted under the
	// retention.
	Expired int `json:"expired,omitempty"`
}

// Handler is the Lambda function's handler.
type Handler struct {
	// Mode is [ModeWorker] or [ModeReconciler]. Optional; defaults to worker.
	Mode string
	// Worker executes invocations. Required in worker mode.
	Worker *functions.Worker
	// ControlPlane is where workers report and the reconciler records.
	// Required.
	ControlPlane sortie.ControlPlane
	// NewEngine returns the engine a scheduled event reconciles with (its
	// launcher invokes the worker function); the handler closes it, which
	// waits for the launches it started. Optional; without it scheduled
	// events are refused.
	NewEngine func() *sortie.Engine
	// Retention, when set, makes each scheduled reconcile delete the
	// terminal runs last updated longer ago (sortie.Engine.ExpireAll)
	// with the payload objects NewEngine's ObjectDeleter names (host/
	// awshost gives it one with the payload bucket: every object the run
	// references, and each attempt's result and checkpoint), before each
	// run's record; an object it fails to delete, or cannot name, is left
	// to the bucket's lifecycle rule. Optional; 0 keeps runs forever.
	Retention time.Duration
	// Logger receives the handler's logs. Optional; defaults to slog.Default().
	Logger *slog.Logger
}

// Invoke handles one Lambda event: an invocation in worker mode; an
// on-failure destination record or a scheduled event in reconciler mode.
// An event of another shape is refused with a [*sortie.ValidationError].
func (h *Handler) Invoke(ctx context.Context, event json.RawMessage) (*Response, error) {
	var shape struct {
		Version        string          `json:"version"`
		RequestPayload json.RawMessage `json:"requestPayload"`
		Source         string          `json:"source"`
		DetailType     string          `json:"detail-type"`
	}
	if err := json.Unmarshal(event, &shape); err != nil {
		return nil, sortie.Invalidf("event", "not a JSON object: %v", err)
	}
	reconciler := h.Mode == ModeReconciler
	switch {
	case !reconciler && strings.HasPrefix(shape.Version, invocationVersionPrefix):
		// Any invocation version goes to the decoder, which names a version
		// it does not support, as the CLI worker does.
		return h.work(ctx, event)
	case reconciler && len(shape.RequestPayload) > 0:
		return h.recordFailure(ctx, event)
	case reconciler && shape.DetailType == "Scheduled Event":
		return h.reconcile(ctx)
	}
	return nil, sortie.Invalidf("event", "not an event of %s mode (an invocation %q, an on-failure destination record or a scheduled event)",
		h.mode(), sortie.InvocationVersion)
}

// invocationVersionPrefix starts every worker invocation format version.
const invocationVersionPrefix = "sortie.invocation/"

func (h *Handler) mode() string {
	if h.Mode == "" {
		return ModeWorker
	}
	return h.Mode
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// work executes one invocation.
func (h *Handler) work(ctx context.Context, event []byte) (*Response, error) {
	began := time.Now()
	inv, err := sortie.DecodeInvocation(event)
	if err != nil {
		return nil, fmt.Errorf("lambda worker: %w", err)
	}
	owner := owner(ctx)
	inner, err := functions.NewReporter(inv, h.ControlPlane, owner, callbackClient)
	if err != nil {
		return nil, fmt.Errorf("lambda worker: run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	rep := &usageReporter{Reporter: functions.WithClaimShape(inner, shape()), began: began}
	ctx, cancel := stopAhead(ctx)
	defer cancel()
	w := *h.Worker // this invocation's worker, named in its logs
	w.Owner = owner
	o, err := w.Execute(ctx, inv, rep)
	resp := &Response{RunID: inv.RunID, Attempt: inv.Attempt}
	switch {
	case err != nil && !rep.finishing:
		resp.Status, resp.Reason = StatusNotExecuted, err.Error()
		return resp, nil
	case err != nil:
		return nil, err // Lambda's on-failure destination takes it to the reconciler
	}
	resp.Status, resp.Outcome = StatusFinished, outcomeState(o)
	return resp, nil
}

// owner names the worker in claims: the function and the request ID.
func owner(ctx context.Context) string {
	id := "unknown-request"
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		id = lc.AwsRequestID
	}
	return "lambda:" + lambdacontext.FunctionName + "/" + id
}

// stopAhead returns ctx with a deadline min(1 s, 10% of the time left)
// before the Lambda deadline, so the outcome is stored before Lambda ends
// the invocation.
func stopAhead(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := max(0, min(time.Second, time.Until(d)/10))
	return context.WithDeadline(ctx, d.Add(-reserve))
}

func outcomeState(o sortie.Outcome) sortie.State {
	switch {
	case o.Interrupt != nil:
		return o.Interrupt.State
	case o.Error != nil && o.Error.Type == sortie.ErrorTypeCancelled:
		return sortie.StateCancelled
	case o.Error != nil && o.Error.Type == sortie.ErrorTypeRejected:
		return sortie.StateRejected
	case o.Error != nil:
		return sortie.StateFailed
	}
	return sortie.StateCompleted
}

// usageReporter adds the Lambda usage to the outcome it finishes with (its
// claim states the shape, see [shape]) and notes that Finish was reached
// (so a failed Finish is told apart from a refused claim).
type usageReporter struct {
	functions.Reporter
	began     time.Time
	finishing bool
}

func (r *usageReporter) Finish(ctx context.Context, o sortie.Outcome) error {
	r.finishing = true
	u := sortie.Usage{}
	if o.Usage != nil {
		u = *o.Usage
	}
	u.BilledDurationMs = int64(math.Ceil(float64(time.Since(r.began).Nanoseconds()) / 1e6))
	u.Requests = 1
	o.Usage = u.Plus(shape())
	return r.Reporter.Finish(ctx, o)
}

// shape is the compute shape of this execution environment, stated at the
// claim (so a budget prices the live attempt) and again at the finish:
// the function's memory size in MB and its architecture (left out when Go
// runs on one Lambda does not offer).
func shape() *sortie.Usage {
	u := &sortie.Usage{MemoryMB: int64(lambdacontext.MemoryLimitInMB)}
	if a := lambdaArch(runtime.GOARCH); a == "arm64" || a == "x86_64" {
		u.Arch = a
	}
	return u
}

// lambdaArch names a Go architecture as Lambda does: "arm64" or
// "x86_64".
func lambdaArch(goarch string) string {
	if goarch == "amd64" {
		return "x86_64"
	}
	return goarch
}

var errNoEngine = errors.New("this function has no engine to reconcile with")

// callbackClient sends callbacks of invocations that report to their host
// over HTTPS (the URL comes from the invocation, which only principals
// allowed to invoke the function can send).
var callbackClient = &http.Client{Timeout: 30 * time.Second}
