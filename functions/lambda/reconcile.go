package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
)

// ErrorTypeLambda is the error type the reconciler records for an attempt
// whose Lambda invocation failed without the worker storing an outcome
// (a crash, a timeout, an out-of-memory kill). It is retryable.
const ErrorTypeLambda = "lambda"

// maxRecordBytes bounds a destination record: the 1 MB async payload plus
// Lambda's context and the response's error.
const maxRecordBytes = 2 << 20

// DestinationRecord is the JSON Lambda sends to an asynchronous
// invocation's on-failure destination.
type DestinationRecord struct {
	Version        string `json:"version"`
	Timestamp      string `json:"timestamp"`
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	// RequestPayload is the invocation the failed request carried.
	RequestPayload  json.RawMessage `json:"requestPayload"`
	ResponseContext struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError"`
	} `json:"responseContext"`
	ResponsePayload json.RawMessage `json:"responsePayload"`
}

// recordFailure ends the attempt a destination record names, when it is
// still the run's live attempt with that launch ID; conditional on the
// run's version, so a heartbeat or finish that came first wins.
func (h *Handler) recordFailure(ctx context.Context, event []byte) (*Response, error) {
	if len(event) > maxRecordBytes {
		return nil, sortie.Invalidf("event", "%d bytes, limit %d", len(event), maxRecordBytes)
	}
	var rec DestinationRecord
	if err := json.Unmarshal(event, &rec); err != nil {
		return nil, sortie.Invalidf("event", "not an on-failure destination record: %v", err)
	}
	inv, err := sortie.DecodeInvocation(rec.RequestPayload)
	if err != nil {
		return nil, fmt.Errorf("lambda reconciler: requestPayload: %w", err)
	}
	resp := &Response{RunID: inv.RunID, Attempt: inv.Attempt}
	run, err := h.ControlPlane.Get(ctx, inv.RunID)
	if err != nil {
		return nil, fmt.Errorf("lambda reconciler: get run %s: %w", inv.RunID, err)
	}
	cur := run.Current()
	if run.State.Terminal() || cur == nil || cur.Number != inv.Attempt || cur.LaunchID != inv.LaunchID || cur.Ended() {
		resp.Status, resp.Reason = StatusIgnored, "the attempt has ended or was superseded"
		return resp, nil
	}
	msg := &sortie.ErrorMessage{Type: ErrorTypeLambda, Message: failureMessage(&rec), Retryable: true}
	run, err = h.ControlPlane.Finish(ctx, sortie.Finish{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Outcome: sortie.Outcome{Error: msg}, IfVersion: run.Version, NowMs: time.Now().UnixMilli()})
	if errors.Is(err, sortie.ErrConflict) {
		resp.Status, resp.Reason = StatusIgnored, "the run changed meanwhile: "+err.Error()
		return resp, nil
	} else if err != nil {
		return nil, fmt.Errorf("lambda reconciler: finish run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	h.logger().Info("recorded a failed Lambda invocation", "run", inv.RunID, "attempt", inv.Attempt, "request", rec.RequestContext.RequestID)
	resp.Status, resp.Outcome = StatusRecorded, run.State
	return resp, nil
}

// failureMessage describes the failure from the record, clipped.
func failureMessage(rec *DestinationRecord) string {
	var p struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	_ = json.Unmarshal(rec.ResponsePayload, &p)
	s := fmt.Sprintf("the Lambda invocation %s failed (%s", rec.RequestContext.RequestID, rec.RequestContext.Condition)
	if rec.ResponseContext.FunctionError != "" {
		s += ", " + rec.ResponseContext.FunctionError
	}
	s += ")"
	if p.ErrorType != "" || p.ErrorMessage != "" {
		s += ": " + p.ErrorType + ": " + p.ErrorMessage
	}
	if len(s) > 2048 {
		s = strings.ToValidUTF8(s[:2048], "") + "…"
	}
	return s
}

// budgetMargin is the part of the invocation's time the reconciler keeps
// for closing the engine (the launches it began) and answering.
const budgetMargin = 10 * time.Second

// reconcile reconciles until the pass is empty (a backlog drains 100 runs
// a pass, not 100 a schedule period) or the invocation's time budget, its
// deadline less budgetMargin, ends; it launches the retries its passes
// made due within that budget, and waits for the launches it made.
func (h *Handler) reconcile(ctx context.Context) (*Response, error) {
	if h.NewEngine == nil {
		return nil, fmt.Errorf("lambda reconciler: scheduled event: %w", errNoEngine)
	}
	budget := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		budget, cancel = context.WithDeadline(ctx, d.Add(-min(budgetMargin, time.Until(d)/4)))
		defer cancel()
	}
	e := h.NewEngine()
	defer e.Close()
	n, err := e.ReconcileAll(budget)
	if err != nil {
		return nil, fmt.Errorf("lambda reconciler: reconcile: %w", err)
	}
	resp := &Response{Status: StatusReconciled, Reconciled: n}
	if h.Retention > 0 {
		if resp.Expired, err = e.ExpireAll(budget, time.Now().Add(-h.Retention)); err != nil && budget.Err() == nil {
			return nil, fmt.Errorf("lambda reconciler: expire runs older than %v: %w", h.Retention, err)
		}
	}
	return resp, nil
}
