package launchertest

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// reconcileOnceWhenDue waits until the run is due for the reconciler,
// runs exactly one pass, and returns the run after it.
func (f *fixture) reconcileOnceWhenDue(id sortie.RunID, what string, ready func(*sortie.Run) bool) *sortie.Run {
	f.t.Helper()
	f.waitRun(id, what, false, func(r *sortie.Run) bool {
		return ready(r) && r.LeaseExpiresMs != 0 && r.LeaseExpiresMs <= time.Now().UnixMilli()
	})
	if _, err := f.engine.Reconcile(f.ctx); err != nil {
		f.t.Fatalf("Reconcile() = %v, want nil", err)
	}
	return f.get(id)
}

// checkCancelledOutside checks that the run was cancelled with the
// provider's reason after its one attempt, and that nothing launches
// another.
func (f *fixture) checkCancelledOutside(run *sortie.Run) {
	f.t.Helper()
	if run.State != sortie.StateCancelled || !strings.Contains(run.Reason, "cancelled outside Sortie") {
		f.t.Fatalf("run after the next reconciler pass = %s, want cancelled, its reason saying it was cancelled outside Sortie", describeRun(run))
	}
	if _, err := f.engine.Reconcile(f.ctx); err != nil {
		f.t.Fatalf("Reconcile() = %v, want nil", err)
	}
	if got := f.get(run.ID); len(got.Attempts) != 1 || got.State != sortie.StateCancelled {
		f.t.Errorf("run = %s with %d attempts, want one attempt: no second execution may start", describeRun(got), len(got.Attempts))
	}
}

// An execution cancelled by the provider while still pending (an operator
// in the console) is ended by the next reconciler pass with the provider's
// reason: the run is cancelled, not relaunched, not left to its start
// timeout.
func testCancelledOutsidePending(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	release := f.h.HoldClaims(t)
	defer release()
	run := f.submit(map[string]any{"events": 1, "output": "never"}, sortie.Policy{StartTimeoutMs: 600_000})
	ref := f.waitRef(run.ID, 1)
	f.h.CancelOutside(t, ref)
	got := f.reconcileOnceWhenDue(run.ID, "the pending attempt to be due for a look", func(*sortie.Run) bool { return true })
	f.checkCancelledOutside(got)
	if e := got.Attempts[0].Exit; e == nil || e.Phase != sortie.PhaseCancelled {
		t.Errorf("attempt 1 exit = %+v, want the provider's cancelled status", e)
	}
}

// An execution cancelled by the provider while its worker runs: the worker
// is stopped (SIGTERM) and reports a retryable stop, but the next
// reconciler pass asks the provider before retrying and cancels the run
// with its reason instead.
func testCancelledOutsideRunning(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20}, sortie.Policy{})
	ref := f.waitRef(run.ID, 1)
	f.waitTicking(run.ID)
	f.h.CancelOutside(t, ref)
	f.waitPhase(ref, "the provider to stop the execution", notRunning)
	got := f.reconcileOnceWhenDue(run.ID, "attempt 1 to end and the run to be due", func(r *sortie.Run) bool {
		return r.Attempts[0].Ended()
	})
	f.checkCancelledOutside(got)
}

// A launch held in the provider's queue (a throttled Lambda function
// keeps an accepted event for up to its maximum event age) past the run's
// start timeout — the 60 s default, here 300 ms — is not ended by the
// reconciler: the start deadline includes the queue's age, so no attempt
// is burned and no second event queued; once delivered, the run completes
// on attempt 1.
func testQueuedLaunch(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	release := f.h.HoldClaims(t)
	defer release()
	const startTimeout = 300
	run := f.submit(map[string]any{"events": 1, "output": "after the queue"}, sortie.Policy{StartTimeoutMs: startTimeout})
	f.waitRef(run.ID, 1)
	launched := f.get(run.ID).Attempts[0].LaunchedMs
	f.waitRun(run.ID, "the start timeout to pass by a second, reconciling", true, func(*sortie.Run) bool {
		return time.Now().UnixMilli() > launched+startTimeout+1000
	})
	if r := f.get(run.ID); r.Attempt != 1 || r.Current().Ended() {
		t.Fatalf("run while its launch is queued = %s, attempt 1 ended %v; want attempt 1 still waiting for its worker", describeRun(r), r.Current().Ended())
	}
	release()
	run = f.waitRun(run.ID, "the delivered attempt to settle", false, settled)
	checkResult(t, run, 1, "after the queue")
	if len(run.Attempts) != 1 {
		t.Errorf("run has %d attempts, want 1: the queue's hold burned none", len(run.Attempts))
	}
}

// A submission whose invocation the launcher could not carry (a Cloud Run
// Job's 32 KiB environment value, a Lambda payload) is refused at submit,
// naming the variable that made it large and the limit, and nothing is
// stored: it never fails later at launch.
func testOversizeAtSubmit(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	limit, what := f.launcher.(sortie.InvocationLimiter).MaxInvocationBytes()
	vars, _ := json.Marshal(map[string]string{"note": "small", "pad": strings.Repeat("x", limit)})
	_, err := f.client.Submit(f.ctx, &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "variables.pad" || !strings.Contains(ve.Reason, strconv.Itoa(limit)) {
		t.Fatalf("Submit(variables.pad of %d bytes) = %v, want a ValidationError on variables.pad naming the limit %d (%s)", limit, err, limit, what)
	}
	page, err := f.client.List(f.ctx, sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Errorf("List after a refused submission = %d runs (%v), want none: nothing may be stored", len(page.Runs), err)
	}
}
