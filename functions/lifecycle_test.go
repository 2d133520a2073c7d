package functions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// blockingHandler waits for its context to end, signalling started first,
// and returns the context's error.
func blockingHandler(started chan<- struct{}) Handler {
	return func(ctx context.Context, c *Call) (any, error) {
		if err := c.Emit("started", "", nil); err != nil {
			return nil, err
		}
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

type result struct {
	o   sortie.Outcome
	err error
}

func executeAsync(w *Worker, ctx context.Context, inv *sortie.Invocation, rep Reporter) <-chan result {
	ch := make(chan result, 1)
	go func() {
		o, err := w.Execute(ctx, inv, rep)
		ch <- result{o, err}
	}()
	return ch
}

func wantError(t *testing.T, call string, got *sortie.ErrorMessage, typ string, retryable bool) {
	t.Helper()
	if got == nil || got.Type != typ || got.Retryable != retryable {
		t.Errorf("%s finished with error %+v, want type %q retryable %v", call, got, typ, retryable)
	}
}

func TestCancelRequestedOnHeartbeat(t *testing.T) {
	started := make(chan struct{})
	w, _ := newWorker(register(blockingHandler(started)))
	rep := newRecorder(t)
	done := executeAsync(w, context.Background(), testInvocation("go:h", ""), rep)
	<-started
	rep.cancel.Store(true)
	r := <-done
	if r.err != nil {
		t.Fatalf("Execute = %v", r.err)
	}
	wantError(t, "handler cancelled by a heartbeat", rep.finished().Error, sortie.ErrorTypeCancelled, false)
}

func TestCancelRequestedWinsOverResult(t *testing.T) {
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		<-ctx.Done()
		return "finished anyway", nil
	}))
	rep := newRecorder(t)
	rep.cancel.Store(true)
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	wantError(t, "handler returning a result after a cancel request", rep.finished().Error, sortie.ErrorTypeCancelled, false)
}

func TestClaimLostOnHeartbeat(t *testing.T) {
	started := make(chan struct{})
	w, _ := newWorker(register(blockingHandler(started)))
	rep := newRecorder(t)
	done := executeAsync(w, context.Background(), testInvocation("go:h", ""), rep)
	<-started
	lost := fmt.Errorf("heartbeat run x: %w", sortie.ErrConflict)
	rep.hbErr.Store(&lost)
	<-done
	wantError(t, "handler whose claim was lost", rep.finished().Error, "claim_lost", true)
}

func TestTransientHeartbeatErrorKeepsRunning(t *testing.T) {
	release := make(chan struct{})
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		<-release
		return "ok", ctx.Err()
	}))
	rep := newRecorder(t)
	flaky := fmt.Errorf("heartbeat: %w", sortie.ErrUnavailable)
	rep.hbErr.Store(&flaky)
	done := executeAsync(w, context.Background(), testInvocation("go:h", ""), rep)
	waitFor(t, "three failing heartbeats", func() bool { _, _, n := rep.snapshot(); return n >= 3 })
	close(release)
	<-done
	if o := rep.finished(); string(o.Result) != `"ok"` {
		t.Errorf("after failing heartbeats (ErrUnavailable), Finish(%+v), want result \"ok\"", o)
	}
}

func TestTerminatedWhenContextEnds(t *testing.T) {
	started := make(chan struct{})
	w, _ := newWorker(register(blockingHandler(started)))
	rep := newRecorder(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := executeAsync(w, ctx, testInvocation("go:h", ""), rep)
	<-started
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("Execute after SIGTERM-like cancel = %v, want nil (it still reports)", r.err)
	}
	wantError(t, "handler of a worker being stopped", rep.finished().Error, "terminated", true)
}

func TestTerminatedAfterCancelRequestIsCancelled(t *testing.T) {
	started := make(chan struct{})
	w, _ := newWorker(register(blockingHandler(started)))
	rep := newRecorder(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := executeAsync(w, ctx, testInvocation("go:h", ""), rep)
	<-started
	rep.cancel.Store(true)
	waitFor(t, "a heartbeat after the cancel request", func() bool { _, _, n := rep.snapshot(); return n >= 1 })
	cancel()
	<-done
	wantError(t, "handler stopped by both", rep.finished().Error, sortie.ErrorTypeCancelled, false)
}

func TestDeadline(t *testing.T) {
	var deadline time.Time
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		deadline, _ = ctx.Deadline()
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	inv := testInvocation("go:h", "")
	inv.DeadlineMs = time.Now().Add(500 * time.Millisecond).UnixMilli()
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	wantError(t, "handler past its deadline", rep.finished().Error, sortie.ErrorTypeDeadline, true)
	if end := time.UnixMilli(inv.DeadlineMs); !deadline.Before(end) {
		t.Errorf("handler context deadline %v, want before the attempt's %v (a safety margin)", deadline, end)
	}
}

func TestHandlerDeadlineMargin(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	tests := []struct {
		remaining, margin time.Duration
	}{
		{time.Minute, 5 * time.Second},
		{10 * time.Second, time.Second},
		{0, 0},
		{-time.Second, 0},
	}
	for _, tt := range tests {
		d, m := handlerDeadline(context.Background(), now.Add(tt.remaining).UnixMilli(), now)
		if m != tt.margin || !d.Equal(now.Add(tt.remaining-tt.margin)) {
			t.Errorf("handlerDeadline(now+%v) = %v, %v; want now+%v, %v", tt.remaining, d.Sub(now), m, tt.remaining-tt.margin, tt.margin)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(10*time.Second))
	defer cancel()
	if d, m := handlerDeadline(ctx, now.Add(time.Hour).UnixMilli(), now); m != time.Second || !d.Equal(now.Add(9*time.Second)) {
		t.Errorf("handlerDeadline(ctx ending in 10 s, attempt in 1 h) = now+%v, %v; want now+9s, 1s", d.Sub(now), m)
	}
}

func TestHandlerIgnoringContextIsAbandoned(t *testing.T) {
	release := make(chan struct{})
	lateEmit := make(chan error, 1)
	w, logs := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		<-release
		lateEmit <- c.Emit("late", "", nil)
		return "too late", nil
	}))
	inv := testInvocation("go:h", "")
	inv.DeadlineMs = time.Now().Add(300 * time.Millisecond).UnixMilli()
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	wantError(t, "handler ignoring its deadline", rep.finished().Error, sortie.ErrorTypeDeadline, true)
	close(release)
	if err := <-lateEmit; !errors.Is(err, errAttemptEnded) {
		t.Errorf("Emit after the attempt was reported = %v, want errAttemptEnded", err)
	}
	if !strings.Contains(logs.String(), "did not return") {
		t.Errorf("logs = %q, want a warning about the abandoned handler", logs.String())
	}
}

// A worker that cannot renew its lease (every heartbeat fails: the control
// plane is unreachable) stops its handler before the lease ends, counted
// from its claim on its own clock, and reports the attempt as a retryable
// claim_lost.
func TestFencedBeforeTheLeaseEnds(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan time.Time, 1)
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		close(started)
		<-ctx.Done()
		stopped <- time.Now()
		return nil, ctx.Err()
	}))
	rep := newRecorder(t)
	unreachable := fmt.Errorf("dial control plane: %w", sortie.ErrUnavailable)
	rep.hbErr.Store(&unreachable)
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = 200, 3000
	claimedBy := time.Now()
	done := executeAsync(w, context.Background(), inv, rep)
	<-started
	leaseEnd := claimedBy.Add(3000 * time.Millisecond)
	select {
	case at := <-stopped:
		if !at.Before(leaseEnd) {
			t.Errorf("handler stopped %v after the claim, want before the lease of 3 s ended", at.Sub(claimedBy))
		}
	case <-time.After(time.Until(leaseEnd)):
		t.Fatalf("handler still running when the 3 s lease ended, with every heartbeat failing")
	}
	if r := <-done; r.err != nil {
		t.Fatalf("Execute = %v", r.err)
	}
	o := rep.finished()
	wantError(t, "a fenced handler", o.Error, errTypeClaimLost, true)
	if o.Error != nil && !strings.Contains(o.Error.Message, "could not renew its lease") {
		t.Errorf("fenced attempt's error = %q, want it to say the lease could not be renewed", o.Error.Message)
	}
}

// Heartbeats that succeed keep moving the fence: a handler outliving many
// leases is never fenced while its heartbeats land. (The lease is 1.5 s, so
// the fence, a third of it ahead, is 1 s after the last renewal: a loaded
// machine stalled the 50 ms heartbeats of a 300 ms lease past its 200 ms.)
func TestRenewedLeaseIsNotFenced(t *testing.T) {
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		t := time.NewTimer(4500 * time.Millisecond) // three leases of 1.5 s
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return "outlived three leases", nil
		}
	}))
	rep := newRecorder(t)
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = 100, 1500
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	if o := rep.finished(); o.Error != nil || string(o.Result) != `"outlived three leases"` {
		t.Errorf("handler with heartbeats landing finished with %+v, want its result", o)
	}
}

// An invocation whose deadline has passed by the time it is claimed starts
// nothing: no handler call, no event, a retryable deadline error.
func TestPastDeadlineStartsNothing(t *testing.T) {
	called := false
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		called = true
		return nil, c.Emit("started", "", nil)
	}))
	rep := newRecorder(t)
	inv := testInvocation("go:h", "")
	inv.DeadlineMs = time.Now().Add(-time.Second).UnixMilli()
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	evs, _, _ := rep.snapshot()
	if called || len(evs) != 0 {
		t.Errorf("handler called = %v, %d events stored, want neither for an attempt past its deadline", called, len(evs))
	}
	wantError(t, "an attempt past its deadline", rep.finished().Error, sortie.ErrorTypeDeadline, true)
}
