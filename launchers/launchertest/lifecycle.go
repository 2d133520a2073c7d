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
	// One tick, then nothing to write for a minute (heartbeats every 20 s):
	// the worker is frozen between its writes, not inside one. (A worker
	// frozen inside a write to a SQLite control plane holds the file's
	// write lock; the engine's Cancel then stops its compute first, see
	// the local launcher's TestCancelWhileAWorkerHoldsTheStateLocked.)
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 60_000},
		sortie.Policy{HeartbeatMs: 20_000, LeaseMs: 60_000, CancelTimeoutMs: cancelTimeout.Milliseconds()})
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

// checkNothingRan checks that a cancelled run has one attempt, ended
// cancelled, and that no event was stored: the worker's claim was refused.
func (f *fixture) checkNothingRan(id sortie.RunID) {
	f.t.Helper()
	run := f.get(id)
	if run.State != sortie.StateCancelled || len(run.Attempts) != 1 || run.Attempts[0].Claimed() {
		f.t.Errorf("run = %s with %d attempts (attempt 1 claimed: %v), want cancelled with one unclaimed attempt",
			describeRun(run), len(run.Attempts), len(run.Attempts) > 0 && run.Attempts[0].Claimed())
	}
	if evs := f.events(id); len(evs) != 0 {
		f.t.Errorf("Events(%s) = %d events, want none: nothing may run after the cancel", id, len(evs))
	}
}

// waitCancelCall waits until the launcher made at least want provider
// cancels, when it can cancel at all.
func (f *fixture) waitCancelCall(want int, what string) {
	f.t.Helper()
	if !f.h.CanCancelRunning() {
		return
	}
	f.waitFor(what, func() (bool, string) {
		n := f.h.CancelCalls()
		return n >= want, fmt.Sprintf("%d cancel calls", n)
	})
}

// A cancel while Start is in flight cancels the run at once; the compute
// Start then launches is stopped as soon as Start returns its Ref (a
// provider cancel, where the launcher can), and its worker runs nothing.
func testCancelDuringStart(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	release := f.h.HoldStarts(t)
	defer release()
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20}, sortie.Policy{})
	f.waitRun(run.ID, "the launch to be recorded", false, func(r *sortie.Run) bool { return r.Attempt == 1 })
	got, err := f.client.Cancel(f.ctx, run.ID, "conformance: cancel during Start")
	if err != nil || got.State != sortie.StateCancelled {
		t.Fatalf("Cancel(%s) during Start = %v, %v; want the run cancelled at once", run.ID, got, err)
	}
	release()
	ref := f.waitRef(run.ID, 1)
	f.waitCancelCall(1, "the provider cancel of the compute Start launched")
	if f.h.CanDescribe() {
		f.waitPhase(ref, "the compute to end", notRunning)
	}
	f.checkNothingRan(run.ID)
}

// A cancel of an attempt that was launched but not claimed cancels the run
// at once and reaches the compute (a provider cancel, where the launcher
// can); a worker that starts after it claims nothing and runs nothing.
func testCancelUnclaimed(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	release := f.h.HoldClaims(t)
	defer release()
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20}, sortie.Policy{})
	ref := f.waitRef(run.ID, 1)
	got, err := f.client.Cancel(f.ctx, run.ID, "conformance: cancel a launched, unclaimed attempt")
	if err != nil || got.State != sortie.StateCancelled {
		t.Fatalf("Cancel(%s) before the claim = %v, %v; want the run cancelled at once", run.ID, got, err)
	}
	f.waitCancelCall(1, "the provider cancel of the unclaimed attempt")
	release()
	if f.h.CanDescribe() {
		f.waitPhase(ref, "the compute to end", notRunning)
	}
	f.checkNothingRan(run.ID)
}
