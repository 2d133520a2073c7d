package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// A completed run stores its events, result and the attempt's Lambda usage.
func TestHappyPathUsage(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	e := newEngine(t, cp, &serial{l: newLauncher(t, r, lambda.Options{})})
	run := submit(t, e, map[string]any{"events": 5, "output": map[string]string{"answer": "42"}}, sortie.Policy{}, nil)
	run = waitRun(t, cp, run.ID, "the run to settle", settled)
	if run.State != sortie.StateCompleted || string(run.Result) != `{"answer":"42"}` {
		t.Fatalf("run = %s result %s reason %q, want completed with {\"answer\":\"42\"}", run.State, run.Result, run.Reason)
	}
	evs, err := cp.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	if err != nil || len(evs) != 5 {
		t.Fatalf("Events(%s) = %d events, %v; want 5, nil", run.ID, len(evs), err)
	}
	// Start returns after the attempt under the emulator; its Ref follows.
	run = waitRun(t, cp, run.ID, "the attempt's Ref", func(r *sortie.Run) bool { return r.Current().Ref != nil })
	a := run.Current()
	t.Logf("attempt 1 Ref ID %q", a.Ref.ID)
	if a.Ref == nil || a.Ref.Provider != lambda.Provider || a.Ref.Resource != "function" || a.Ref.ID == "" {
		t.Errorf("attempt 1 Ref = %+v, want provider lambda, resource function and an ID", a.Ref)
	}
	if a.Usage == nil || a.Usage.MemoryMB != 512 || a.Usage.BilledDurationMs < a.Usage.DurationMs || a.Usage.BilledDurationMs < 1 {
		t.Errorf("attempt 1 Usage = %+v, want MemoryMB 512 and BilledDurationMs ≥ max(1, DurationMs)", a.Usage)
	}
	if !strings.HasPrefix(a.Owner, "lambda:function/") {
		t.Errorf("attempt 1 Owner = %q, want lambda:function/REQUEST_ID", a.Owner)
	}
}

// The attempt stops ahead of the Lambda deadline (3 s) with a retryable
// error of type deadline; with one attempt allowed the run fails with it.
func TestDeadline(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 3, fnEnv(table))
	e := newEngine(t, cp, &serial{l: newLauncher(t, r, lambda.Options{})})
	run := submit(t, e, map[string]any{"events": 1, "sleep_ms": 60000}, sortie.Policy{MaxAttempts: 1}, nil)
	run = waitRun(t, cp, run.ID, "the run to settle", settled)
	a := run.Current()
	if run.State != sortie.StateFailed || a.Error == nil || a.Error.Type != sortie.ErrorTypeDeadline || !a.Error.Retryable {
		t.Fatalf("run = %s, attempt error %+v; want failed with a retryable %q error", run.State, a.Error, sortie.ErrorTypeDeadline)
	}
	if strings.Contains(r.Output(), "Task timed out") {
		t.Errorf("the emulator timed the invocation out; want the worker to stop first:\n%s", r.Output())
	}
}

// A handler panic fails the run at once with error type panic.
func TestHandlerPanic(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	e := newEngine(t, cp, &serial{l: newLauncher(t, r, lambda.Options{})})
	run := submit(t, e, map[string]any{"events": 2, "panic": true}, sortie.Policy{}, nil)
	run = waitRun(t, cp, run.ID, "the run to settle", settled)
	if run.State != sortie.StateFailed || len(run.Attempts) != 1 || run.Error == nil || run.Error.Type != "panic" || run.Error.Retryable {
		t.Fatalf("run = %s after %d attempts, error %+v; want failed after 1 attempt with a non-retryable panic", run.State, len(run.Attempts), run.Error)
	}
}

// A submission whose invocation would be over MaxPayloadBytes is refused at
// submit, naming the variable and the limit, and nothing is stored; Start
// itself still refuses an oversize invocation before sending (a resume can
// grow one after submit).
func TestPayloadOverLimit(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	l := newLauncher(t, r, lambda.Options{MaxPayloadBytes: 4096})
	e := newEngine(t, cp, &serial{l: l})
	big := strings.Repeat("x", 8192)
	vars, _ := json.Marshal(map[string]any{"events": 1, "output": big})
	_, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	var ve *sortie.ValidationError
	if !errors.Is(err, sortie.ErrInvalidArgument) || !errors.As(err, &ve) || ve.Field != "variables.output" || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("Submit(8 KB variable, limit 4096) = %v, want a *sortie.ValidationError of field variables.output naming 4096", err)
	}
	if page, err := cp.List(context.Background(), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Fatalf("List after the refused submit = %d runs, %v; want none stored", len(page.Runs), err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1, LaunchID: "x", Variables: json.RawMessage(`{"output":"` + big + `"}`)}
	_, err = l.Start(context.Background(), inv)
	if !errors.Is(err, sortie.ErrInvalidArgument) || !errors.As(err, &ve) || ve.Field != "invocation" {
		t.Errorf("Start(8 KB invocation, limit 4096) = %v, want a *sortie.ValidationError of field invocation", err)
	}
	if _, err := lambda.New(lambdaClient(r), lambda.Options{Function: "function", MaxPayloadBytes: 2 << 20}); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("New(MaxPayloadBytes 2 MiB) = %v, want ErrInvalidArgument (Lambda's async limit is 1 MiB)", err)
	}
	if diff := cmp.Diff(1<<20, lambda.DefaultMaxPayloadBytes); diff != "" {
		t.Errorf("DefaultMaxPayloadBytes (-want +got):\n%s", diff)
	}
}

// A run's budget stops the running invocation (the worker states its
// 512 MB and its architecture at the claim, so a heartbeat prices the live
// attempt): the run fails with budget_exceeded long before the 60 s
// deadline. At the default table 512 MB cost at least 6,667 n$ a second
// (arm64; x86_64 8,333), so a budget of 20,000 n$ is crossed within about
// 3 s; the request fee (200 n$) alone, which is all the projection priced
// before claims carried a shape, never crosses it. The invocation is held
// in the simulated queue until its Ref is stored, as Lambda answers an
// Event invoke at once (the emulator answers only after the attempt).
func TestBudgetStopsTheInvocation(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	s := &serial{l: newLauncher(t, r, lambda.Options{})}
	e := newEngine(t, cp, s)
	release := s.holdQueue()
	began := time.Now()
	run := submit(t, e, map[string]any{"events": 1, "sleep_ms": 60000}, sortie.Policy{MaxCostNanoUSD: 20_000, MaxAttempts: 1}, nil)
	waitRun(t, cp, run.ID, "the attempt's Ref", func(r *sortie.Run) bool { c := r.Current(); return c != nil && c.Ref != nil })
	delivered := make(chan struct{})
	go func() { release(); close(delivered) }()
	run = waitRun(t, cp, run.ID, "the run to settle", settled)
	<-delivered
	a := run.Current()
	if run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Fatalf("run = %s error %+v, attempt error %+v; want failed with budget_exceeded", run.State, run.Error, a.Error)
	}
	if a.Usage == nil || a.Usage.MemoryMB != 512 || a.Usage.BilledDurationMs >= 30_000 {
		t.Errorf("attempt 1 Usage = %+v, want MemoryMB 512, stopped well before the 60 s deadline", a.Usage)
	}
	t.Logf("stopped after %v: %s", time.Since(began), run.Error.Message)
}
