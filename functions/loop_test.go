package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/testwait"
)

// inProcess is a launcher that runs each attempt with a worker in this
// process, reporting to the control plane. deliveries > 1 delivers each
// invocation that often at once, like an at-least-once queue.
type inProcess struct {
	w          *functions.Worker
	cp         sortie.ControlPlane
	deliveries int

	wg      sync.WaitGroup
	mu      sync.Mutex
	results []execResult
}

type execResult struct {
	inv *sortie.Invocation
	o   sortie.Outcome
	err error
}

func (l *inProcess) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	for range max(1, l.deliveries) {
		l.wg.Go(func() {
			rep := functions.NewControlPlaneReporter(l.cp, inv, "test-worker")
			o, err := l.w.Execute(context.Background(), inv, rep)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.results = append(l.results, execResult{inv, o, err})
		})
	}
	return sortie.Ref{Provider: "in-process", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

func (l *inProcess) executions() []execResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]execResult(nil), l.results...)
}

type loop struct {
	cp       *memory.ControlPlane
	launcher *inProcess
	client   *sortie.Client
	executed atomic.Int32 // calls of the "count" handler
}

// newLoop wires a memory control plane, an engine with a reconciler and an
// in-process launcher whose worker has the probe and a counting handler.
func newLoop(t *testing.T, deliveries int) *loop {
	t.Helper()
	lp := &loop{cp: memory.New()}
	reg := functions.NewRegistry()
	probe.Register(reg)
	reg.Register("count", func(ctx context.Context, c *functions.Call) (any, error) {
		lp.executed.Add(1)
		return probe.Handle(ctx, c)
	})
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := &functions.Worker{Registry: reg, Logger: discard}
	lp.launcher = &inProcess{w: w, cp: lp.cp, deliveries: deliveries}
	agents := sortie.Agents{}
	for _, name := range []string{"probe", "count"} {
		if err := agents.Add(sortie.Manifest{Name: name, Runtime: "go:" + name}); err != nil {
			t.Fatal(err)
		}
	}
	engine := sortie.NewEngine(lp.cp, lp.launcher, agents, &sortie.EngineOptions{
		DefaultPolicy: sortie.Policy{HeartbeatMs: 10, LeaseMs: 5000, BackoffMs: 5, BackoffMaxMs: 10},
		Logger:        discard,
	})
	ctx, cancel := context.WithCancel(context.Background())
	reconciled := make(chan struct{})
	go func() { defer close(reconciled); engine.RunReconciler(ctx, 10*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		<-reconciled
		engine.Close()
		lp.launcher.wg.Wait()
		lp.cp.Close()
	})
	lp.client = sortie.NewClient(engine, &sortie.ClientOptions{PollInterval: 5 * time.Millisecond})
	return lp
}

// run submits agent with vars and policy and waits until it is terminal or
// interrupted.
func (lp *loop) run(t *testing.T, agent, vars string, p sortie.Policy) *sortie.Run {
	t.Helper()
	run, err := lp.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: agent, Variables: json.RawMessage(vars), Policy: p})
	if err != nil {
		t.Fatalf("Submit(%s, %s) = %v", agent, vars, err)
	}
	return lp.wait(t, run.ID)
}

func (lp *loop) wait(t *testing.T, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := lp.client.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

func TestLoopCompletedWithEvents(t *testing.T) {
	lp := newLoop(t, 1)
	run := lp.run(t, "probe", `{"events":3}`, sortie.Policy{})
	if run.State != sortie.StateCompleted || string(run.Result) != `{"attempt":1,"events":3}` {
		t.Fatalf("probe run ended %s with result %s, want completed with {\"attempt\":1,\"events\":3}", run.State, run.Result)
	}
	a := run.Attempts[0]
	if a.Owner != "test-worker" || a.Usage == nil || a.Outcome != sortie.StateCompleted {
		t.Errorf("attempt 1 = %+v, want owner test-worker, usage, outcome completed", a)
	}
	events, err := lp.cp.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []sortie.Cursor
	for _, e := range events {
		got = append(got, e.Cursor())
	}
	if want := []sortie.Cursor{{Attempt: 1, Seq: 1}, {Attempt: 1, Seq: 2}, {Attempt: 1, Seq: 3}}; !cmp.Equal(want, got) {
		t.Errorf("stored events at %v, want %v", got, want)
	}
}

func TestLoopDuplicateDeliveryExecutesOnce(t *testing.T) {
	lp := newLoop(t, 3)
	run := lp.run(t, "count", `{"events":2}`, sortie.Policy{})
	if run.State != sortie.StateCompleted {
		t.Fatalf("run delivered 3 times ended %s, want completed", run.State)
	}
	lp.launcher.wg.Wait()
	if n := lp.executed.Load(); n != 1 {
		t.Errorf("handler executed %d times for 3 deliveries, want 1", n)
	}
	refused := 0
	for _, r := range lp.launcher.executions() {
		if errors.Is(r.err, sortie.ErrConflict) || errors.Is(r.err, sortie.ErrTerminal) {
			refused++
		} else if r.err != nil {
			t.Errorf("Execute = %v, want nil or a refused claim", r.err)
		}
	}
	if refused != 2 {
		t.Errorf("%d of 3 deliveries refused at claim, want 2", refused)
	}
	if events, _ := lp.cp.Events(context.Background(), run.ID, sortie.Cursor{}, 100); len(events) != 2 {
		t.Errorf("stored %d events, want 2 (one execution)", len(events))
	}
}

func TestLoopCancelSeenOnHeartbeat(t *testing.T) {
	lp := newLoop(t, 1)
	ctx := context.Background()
	run, err := lp.client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":0,"until_cancelled":true,"interval_ms":10}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a tick event", func() bool {
		events, err := lp.cp.Events(ctx, run.ID, sortie.Cursor{}, 1)
		return err == nil && len(events) == 1
	})
	if _, err := lp.cp.RequestCancel(ctx, run.ID, "test cancel"); err != nil {
		t.Fatal(err)
	}
	run = lp.wait(t, run.ID)
	if run.State != sortie.StateCancelled || run.Attempts[0].Error == nil || run.Attempts[0].Error.Type != sortie.ErrorTypeCancelled {
		t.Errorf("after RequestCancel: run %s, attempt error %+v; want cancelled with error type cancelled", run.State, run.Attempts[0].Error)
	}
}

func TestLoopOutcomes(t *testing.T) {
	tests := []struct {
		name, vars string
		policy     sortie.Policy
		state      sortie.State
		attempts   int
		errType    string // of the run's error
	}{
		{"deadline", `{"events":0,"sleep_ms":60000}`, sortie.Policy{MaxAttempts: 1, AttemptTimeoutMs: 300}, sortie.StateFailed, 1, "deadline"},
		{"panic", `{"panic":true}`, sortie.Policy{MaxAttempts: 3}, sortie.StateFailed, 1, "panic"},
		{"retryable then ok", `{"fail":"flaky","retryable":true,"fail_attempts":1}`, sortie.Policy{MaxAttempts: 3}, sortie.StateCompleted, 2, ""},
		{"retryable until out of attempts", `{"fail":"flaky","retryable":true}`, sortie.Policy{MaxAttempts: 2}, sortie.StateFailed, 2, "error"},
		{"permanent", `{"fail":"broken"}`, sortie.Policy{MaxAttempts: 3}, sortie.StateFailed, 1, "error"},
		{"bad variables", `{"events":"many"}`, sortie.Policy{MaxAttempts: 3}, sortie.StateFailed, 1, "invalid_argument"},
	}
	lp := newLoop(t, 1)
	for _, tt := range tests {
		run := lp.run(t, "probe", tt.vars, tt.policy)
		errType := ""
		if run.Error != nil {
			errType = run.Error.Type
		}
		if run.State != tt.state || len(run.Attempts) != tt.attempts || errType != tt.errType {
			t.Errorf("%s: run ended %s after %d attempts with error %+v; want %s after %d with error type %q",
				tt.name, run.State, len(run.Attempts), run.Error, tt.state, tt.attempts, tt.errType)
		}
	}
}

func TestLoopInterruptAndResume(t *testing.T) {
	lp := newLoop(t, 1)
	run := lp.run(t, "probe", `{"events":1,"interrupt":"input-required"}`, sortie.Policy{})
	want := &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "need input", Checkpoint: json.RawMessage(`{"step":1}`)}
	if run.State != sortie.StateInputRequired || !cmp.Equal(want, run.Interrupt) {
		t.Fatalf("probe interrupt: run %s, interrupt %+v; want input-required with %+v", run.State, run.Interrupt, want)
	}
	if _, err := lp.client.Resume(context.Background(), run.ID, json.RawMessage(`"yes"`)); err != nil {
		t.Fatal(err)
	}
	run = lp.wait(t, run.ID)
	if wantOut := `{"checkpoint":{"step":1},"resumed_with":"yes"}`; run.State != sortie.StateCompleted || string(run.Result) != wantOut || run.Attempt != 2 {
		t.Errorf("after Resume: run %s attempt %d result %s; want completed on attempt 2 with %s", run.State, run.Attempt, run.Result, wantOut)
	}
}

func TestLoopClaimLost(t *testing.T) {
	lp := newLoop(t, 1)
	ctx := context.Background()
	run, err := lp.client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":0,"until_cancelled":true}`), Policy: sortie.Policy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a tick event", func() bool {
		events, err := lp.cp.Events(ctx, run.ID, sortie.Cursor{}, 1)
		return err == nil && len(events) == 1
	})
	run, _ = lp.cp.Get(ctx, run.ID)
	// End the attempt as the reconciler would for an expired lease.
	lease := &sortie.ErrorMessage{Type: sortie.ErrorTypeLeaseExpired, Message: "test"}
	if _, err := lp.cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: run.Attempts[0].LaunchID, Outcome: sortie.Outcome{Error: lease}, NowMs: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to stop", func() bool { return len(lp.launcher.executions()) == 1 })
	r := lp.launcher.executions()[0]
	if r.o.Error == nil || r.o.Error.Type != "claim_lost" {
		t.Errorf("worker whose attempt was ended elsewhere reported %+v (err %v), want error type claim_lost", r.o, r.err)
	}
	if run, _ = lp.cp.Get(ctx, run.ID); run.Error == nil || run.Error.Type != sortie.ErrorTypeLeaseExpired {
		t.Errorf("run error %+v, want the reconciler's lease_expired kept (first finish wins)", run.Error)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, 10*time.Second, cond)
}
