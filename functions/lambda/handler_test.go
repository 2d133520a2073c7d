package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/functions/probe"
)

// queue is a launcher that only keeps the invocations the engine starts.
type queue struct{ invs chan *sortie.Invocation }

func (q *queue) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	q.invs <- inv
	return sortie.Ref{Provider: "lambda", ID: "queued", RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// fixture is a memory control plane, an engine that queues invocations
// and a worker-mode handler with probe.
type fixture struct {
	cp *memory.ControlPlane
	e  *sortie.Engine
	q  *queue
	h  *fnlambda.Handler
}

func newFixture(t *testing.T, mode string) *fixture {
	cp := memory.New()
	q := &queue{invs: make(chan *sortie.Invocation, 4)}
	e := sortie.NewEngine(cp, q, sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}},
		&sortie.EngineOptions{DefaultPolicy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 1000, MaxAttempts: 2}})
	t.Cleanup(func() { e.Close(); cp.Close() })
	reg := functions.NewRegistry()
	probe.Register(reg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &fnlambda.Handler{Mode: mode, Worker: &functions.Worker{Registry: reg, Logger: log}, ControlPlane: cp, Logger: log}
	return &fixture{cp: cp, e: e, q: q, h: h}
}

// launch submits a probe run with vars and returns its invocation as JSON.
func (f *fixture) launch(t *testing.T, vars string) (*sortie.Invocation, json.RawMessage) {
	t.Helper()
	if _, err := f.e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(vars)}); err != nil {
		t.Fatalf("Submit(probe %s) = %v, want nil", vars, err)
	}
	inv := <-f.q.invs
	b, _ := json.Marshal(inv)
	return inv, b
}

// lambdaCtx is a context as aws-lambda-go makes it, with request id and deadline.
func lambdaCtx(t *testing.T, id string, d time.Duration) context.Context {
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

func TestInvokeOnceWithUsage(t *testing.T) {
	lambdacontext.MemoryLimitInMB = 256
	f := newFixture(t, "")
	inv, event := f.launch(t, `{"events":2,"output":"done"}`)
	resp, err := f.h.Invoke(lambdaCtx(t, "req-1", time.Minute), event)
	want := &fnlambda.Response{Status: fnlambda.StatusFinished, RunID: inv.RunID, Attempt: 1, Outcome: sortie.StateCompleted}
	if diff := cmp.Diff(want, resp); err != nil || diff != "" {
		t.Fatalf("Invoke(invocation) = %v; response (-want +got):\n%s", err, diff)
	}
	again, err := f.h.Invoke(lambdaCtx(t, "req-2", time.Minute), event)
	if err != nil || again.Status != fnlambda.StatusNotExecuted || !strings.Contains(again.Reason, "nothing executed") {
		t.Errorf("Invoke(the same invocation again) = %+v, %v; want status %q saying nothing executed", again, err, fnlambda.StatusNotExecuted)
	}
	run, _ := f.cp.Get(t.Context(), inv.RunID)
	a := run.Current()
	if a.Owner != "lambda:"+lambdacontext.FunctionName+"/req-1" || a.Usage == nil || a.Usage.MemoryMB != 256 || a.Usage.BilledDurationMs < 1 ||
		a.Usage.Requests != 1 || (a.Usage.Arch != "arm64" && a.Usage.Arch != "x86_64") {
		t.Errorf("attempt 1 owner %q usage %+v, want the first request's owner, MemoryMB 256, BilledDurationMs ≥ 1, 1 request, arch arm64 or x86_64",
			a.Owner, a.Usage)
	}
	if evs, _ := f.cp.Events(t.Context(), inv.RunID, sortie.Cursor{}, 10); len(evs) != 2 {
		t.Errorf("Events(%s) = %d events, want 2 (one execution)", inv.RunID, len(evs))
	}
}

// The attempt stops ahead of the context's deadline with type deadline.
func TestInvokeStopsAheadOfDeadline(t *testing.T) {
	f := newFixture(t, fnlambda.ModeWorker)
	inv, event := f.launch(t, `{"events":0,"sleep_ms":60000}`)
	resp, err := f.h.Invoke(lambdaCtx(t, "req-1", 1500*time.Millisecond), event)
	if err != nil || resp.Outcome != sortie.StateFailed {
		t.Fatalf("Invoke(sleeping attempt, 1.5 s left) = %+v, %v; want a failed outcome", resp, err)
	}
	run, _ := f.cp.Get(t.Context(), inv.RunID)
	if e := run.Attempts[0].Error; e == nil || e.Type != sortie.ErrorTypeDeadline || !e.Retryable {
		t.Errorf("attempt 1 error = %+v, want a retryable %q error", e, sortie.ErrorTypeDeadline)
	}
}

func TestInvokeRefusesOtherShapes(t *testing.T) {
	f := newFixture(t, fnlambda.ModeWorker)
	_, event := f.launch(t, `{"events":0}`)
	record := `{"requestContext":{"requestId":"r"},"requestPayload":` + string(event) + `}`
	cases := map[string]string{
		"not JSON":                        `nope`,
		"destination record, worker mode": record,
		"scheduled event, worker mode":    `{"source":"aws.events","detail-type":"Scheduled Event"}`,
		"invocation of another version":   `{"version":"sortie.invocation/v9"}`,
	}
	for name, ev := range cases {
		if _, err := f.h.Invoke(t.Context(), json.RawMessage(ev)); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("Invoke(%s) = %v, want ErrInvalidArgument", name, err)
		}
	}
	// An invocation of another version is named, with the version wanted,
	// as the CLI worker names it.
	_, err := f.h.Invoke(t.Context(), json.RawMessage(cases["invocation of another version"]))
	if err == nil || !strings.Contains(err.Error(), `"sortie.invocation/v9" is not supported`) || !strings.Contains(err.Error(), sortie.InvocationVersion) {
		t.Errorf("Invoke(invocation v9) = %v, want an error naming v9 and %s", err, sortie.InvocationVersion)
	}
	f.h.Mode = fnlambda.ModeReconciler
	if _, err := f.h.Invoke(t.Context(), event); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Invoke(invocation, reconciler mode) = %v, want ErrInvalidArgument", err)
	}
	if _, err := f.h.Invoke(t.Context(), json.RawMessage(`{"detail-type":"Scheduled Event"}`)); err == nil {
		t.Errorf("Invoke(scheduled event, reconciler without engine) = nil error, want an error")
	}
}

// A destination record ends a live attempt once; a record of an ended
// attempt is ignored.
func TestRecordFailure(t *testing.T) {
	f := newFixture(t, fnlambda.ModeReconciler)
	inv, event := f.launch(t, `{"events":0}`)
	record := json.RawMessage(`{"requestContext":{"requestId":"r-9","condition":"RetriesExhausted"},"requestPayload":` + string(event) +
		`,"responseContext":{"functionError":"Unhandled"},"responsePayload":{"errorType":"Runtime.ExitError","errorMessage":"exit status 97"}}`)
	resp, err := f.h.Invoke(t.Context(), record)
	if err != nil || resp.Status != fnlambda.StatusRecorded {
		t.Fatalf("Invoke(record of a live attempt) = %+v, %v; want status %q", resp, err, fnlambda.StatusRecorded)
	}
	run, _ := f.cp.Get(t.Context(), inv.RunID)
	e := run.Attempts[0].Error
	if e == nil || e.Type != fnlambda.ErrorTypeLambda || !e.Retryable || !strings.Contains(e.Message, "r-9") || !strings.Contains(e.Message, "exit status 97") {
		t.Errorf("attempt 1 error = %+v, want a retryable %q error naming the request and its error", e, fnlambda.ErrorTypeLambda)
	}
	if resp, err := f.h.Invoke(t.Context(), record); err != nil || resp.Status != fnlambda.StatusIgnored {
		t.Errorf("Invoke(the same record again) = %+v, %v; want status %q", resp, err, fnlambda.StatusIgnored)
	}
}
