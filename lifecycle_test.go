package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/testwait"
)

// countingLauncher records its Start calls: how many, and how many began
// after the test marked the engine closed.
type countingLauncher struct {
	closed     atomic.Bool
	starts     atomic.Int64
	afterClose atomic.Int64
}

func (l *countingLauncher) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	l.starts.Add(1)
	if l.closed.Load() {
		l.afterClose.Add(1)
	}
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// interrupted stores a run waiting for input, so Resume launches it.
func interrupted(t *testing.T, cp sortie.ControlPlane) sortie.RunID {
	t.Helper()
	ctx := context.Background()
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: probeAgent["probe"], Policy: probeAgent["probe"].Policy}
	now := time.Now().UnixMilli()
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now}); err != nil {
		t.Fatal(err)
	}
	lid := sortie.NewLaunchID()
	steps := []error{}
	_, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now})
	steps = append(steps, err)
	_, err = cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now})
	steps = append(steps, err)
	_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now,
		Outcome: sortie.Outcome{Interrupt: &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "more?"}}})
	steps = append(steps, err)
	if err := errors.Join(steps...); err != nil {
		t.Fatalf("store an interrupted run: %v", err)
	}
	return run.ID
}

// Submit, Resume and Reconcile racing Close never begin a Start after
// Close returned (run with -race: the closed check and the launch
// accounting share one lock).
func TestNoStartAfterClose(t *testing.T) {
	for round := range 20 {
		cp := memory.New()
		l := &countingLauncher{}
		e := sortie.NewEngine(cp, l, probeAgent, nil)
		var ids []sortie.RunID
		for range 5 {
			ids = append(ids, interrupted(t, cp))
		}
		past := time.Now().Add(-time.Minute).UnixMilli()
		for range 5 { // orphaned reservations, which Reconcile launches
			orphan := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: probeAgent["probe"]}
			if _, _, err := cp.Reserve(context.Background(), &sortie.Reservation{Run: orphan, NowMs: past}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		begin := make(chan struct{})
		for i := range 10 {
			wg.Go(func() {
				<-begin
				_, _ = e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{}`)})
				if i < len(ids) {
					_, _ = e.Resume(context.Background(), ids[i], json.RawMessage(`{"more":true}`))
				}
				_, _ = e.Reconcile(context.Background())
			})
		}
		close(begin)
		e.Close()
		l.closed.Store(true)
		wg.Wait()
		if n := l.afterClose.Load(); n != 0 {
			t.Fatalf("round %d: %d of %d Start calls began after Close returned, want 0", round, n, l.starts.Load())
		}
		if _, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"}); !errors.Is(err, sortie.ErrClosed) {
			t.Fatalf("Submit after Close = %v, want ErrClosed", err)
		}
		if _, err := e.Resume(context.Background(), ids[0], nil); !errors.Is(err, sortie.ErrClosed) {
			t.Fatalf("Resume after Close = %v, want ErrClosed", err)
		}
		if _, err := e.Reconcile(context.Background()); !errors.Is(err, sortie.ErrClosed) {
			t.Fatalf("Reconcile after Close = %v, want ErrClosed", err)
		}
		cp.Close()
	}
}

// blockingLauncher's Start returns only when its context ends.
type blockingLauncher struct{ entered chan string }

func (l *blockingLauncher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	l.entered <- inv.LaunchID
	<-ctx.Done()
	return sortie.Ref{}, ctx.Err()
}

// A Start that never returns by itself is bounded: by LaunchTimeout while
// the engine runs (the attempt ends with a retryable launch error), and by
// Close's grace when the engine closes.
func TestStartIsBounded(t *testing.T) {
	cp := memory.New()
	defer cp.Close()
	l := &blockingLauncher{entered: make(chan string, 4)}
	e := sortie.NewEngine(cp, l, probeAgent, &sortie.EngineOptions{LaunchTimeout: 50 * time.Millisecond, CloseGrace: 50 * time.Millisecond})
	run, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	<-l.entered
	testwait.Until(t, "the timed-out Start to end attempt 1", 10*time.Second, func() bool {
		got, _ := cp.Get(context.Background(), run.ID)
		a := got.Attempts[0]
		return a.Ended() && a.Error != nil && a.Error.Type == sortie.ErrorTypeLaunch && a.Error.Retryable
	})

	closing := sortie.NewEngine(cp, l, probeAgent, &sortie.EngineOptions{LaunchTimeout: time.Hour, CloseGrace: 50 * time.Millisecond})
	second, err := closing.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	<-l.entered
	closing.Close() // returns once the grace passed and the Start saw its context cancelled
	got, _ := cp.Get(context.Background(), second.ID)
	if a := got.Attempts[0]; !a.Ended() || a.Error == nil || a.Error.Type != sortie.ErrorTypeLaunch {
		t.Errorf("attempt 1 after Close = %+v, want ended with a launch error (its Start was cancelled)", a)
	}
	e.Close()
}

// A worker whose compute ended without reporting (here an in-process
// delivery that returned without claiming) is ended the moment the
// launcher reports the exit: not at the start timeout, which is an hour.
func TestExitWithoutOutcomeEndsTheAttemptAtOnce(t *testing.T) {
	var starts atomic.Int32
	r := newRig(t, func(r *rig, ctx context.Context, inv *sortie.Invocation) error {
		if starts.Add(1) == 1 {
			return errors.New("worker lost its invocation")
		}
		return r.execute(ctx, inv)
	})
	run, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":1}`),
		Policy: sortie.Policy{StartTimeoutMs: time.Hour.Milliseconds()}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.reconcileUntil(t, run.ID, "completed", func(r *sortie.Run) bool { return r.State == sortie.StateCompleted })
	a := got.Attempts[0]
	if a.Error == nil || a.Error.Type != sortie.ErrorTypeExited || !a.Error.Retryable ||
		a.Exit == nil || a.Exit.Phase != sortie.PhaseFailed || a.Exit.Reason == "" {
		t.Errorf("attempt 1 = error %+v exit %+v, want a retryable %s error with the failed status on Exit", a.Error, a.Exit, sortie.ErrorTypeExited)
	}
}
