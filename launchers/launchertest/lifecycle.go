package launchertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// reconcileEvery is the interval of the reconciler the lifecycle
// properties run, as a host does.
const reconcileEvery = 50 * time.Millisecond

// runReconciler runs the fixture engine's reconciler until the test ends.
func (f *fixture) runReconciler() {
	go f.engine.RunReconciler(f.ctx, reconcileEvery)
}

// get reads the run.
func (f *fixture) get(id sortie.RunID) *sortie.Run {
	f.t.Helper()
	run, err := f.client.Get(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Get(%s) = %v, want nil", id, err)
	}
	return run
}

// waitTicking waits until the running attempt stored an event.
func (f *fixture) waitTicking(id sortie.RunID) {
	f.t.Helper()
	f.waitFor("a tick event of the running attempt", func() (bool, string) {
		return len(f.events(id)) > 0, "no event yet"
	})
}

// A crashed worker whose launcher reports the exit is retried after its
// backoff, not its lease: with a 60 s lease and a 500 ms backoff, attempt 2
// is claimed within backoff + 1 s of the worker's exit, and attempt 1
// records the exit code.
func testCrashRetriedPromptly(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	f.runReconciler()
	const backoff = 500 * time.Millisecond
	run := f.submit(map[string]any{"events": 1, "crash_attempts": 1, "output": "again"},
		sortie.Policy{HeartbeatMs: HeartbeatMs, LeaseMs: 60_000, BackoffMs: backoff.Milliseconds()})
	ref := f.waitRef(run.ID, 1)
	f.waitPhase(ref, "the worker of attempt 1 to crash", notRunning)
	f.waitUntil(time.Now().Add(backoff+time.Second), "attempt 2 to be claimed within backoff + 1 s of the crash", func() (bool, string) {
		r := f.get(run.ID)
		return len(r.Attempts) > 1 && r.Attempts[1].Claimed(), describeRun(r)
	})
	run = f.waitRun(run.ID, "the run to settle", false, settled)
	checkResult(t, run, 2, "again")
	a := run.Attempts[0]
	if a.Error == nil || a.Error.Type != sortie.ErrorTypeExited || a.Exit == nil || a.Exit.ExitCode == nil || *a.Exit.ExitCode != crashExitCode {
		t.Errorf("attempt 1 = error %+v exit %+v, want type %s with exit code %d", a.Error, a.Exit, sortie.ErrorTypeExited, crashExitCode)
	}
}

// A frozen worker (alive, hung: no heartbeat, SIGTERM stays pending) is
// cancelled: Cancel returns at once, before the worker is stopped; the
// provider's cancel reaches it (counted, and Describe sees it end where the
// launcher can stop compute); and the run is cancelled within its cancel
// timeout + 1 s, whatever its lease (60 s here).
func testCancelFrozen(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	const cancelTimeout = 3 * time.Second
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20},
		sortie.Policy{HeartbeatMs: HeartbeatMs, LeaseMs: 60_000, CancelTimeoutMs: cancelTimeout.Milliseconds()})
	ref := f.waitRef(run.ID, 1)
	f.waitTicking(run.ID)
	f.h.Freeze(t, ref)
	began := time.Now()
	got, err := f.client.Cancel(f.ctx, run.ID, "conformance: cancel a frozen worker")
	if err != nil {
		t.Fatalf("Cancel(%s) = %v, want nil", run.ID, err)
	}
	if got.State != sortie.StateWorking || !got.CancelRequested {
		t.Errorf("Cancel(%s) returned %s, want the run still working with its cancel requested (the stop happens in the background)", run.ID, describeRun(got))
	}
	f.waitUntil(began.Add(cancelTimeout+time.Second), "the run to be cancelled within the cancel timeout + 1 s", func() (bool, string) {
		r := f.get(run.ID)
		return r.State == sortie.StateCancelled, describeRun(r)
	})
	if !f.h.CanCancelRunning() {
		return
	}
	f.waitFor("the provider cancel call", func() (bool, string) {
		n := f.h.CancelCalls()
		return n > 0, fmt.Sprintf("%d cancel calls", n)
	})
	if f.h.CanDescribe() {
		f.waitPhase(ref, "the frozen worker to be stopped", notRunning)
	}
}
