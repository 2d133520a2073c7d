package launchertest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

// testCapabilities checks each optional interface both ways: a launcher
// implements it exactly when the harness says it has the capability, so
// no launcher claims one it does not have.
func testCapabilities(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	_, isDescriber := f.launcher.(sortie.Describer)
	_, isCanceler := f.launcher.(sortie.Canceler)
	_, isExitWatcher := f.launcher.(sortie.ExitWatcher)
	_, isQueuer := f.launcher.(sortie.Queuer)
	_, isLimiter := f.launcher.(sortie.InvocationLimiter)
	for _, c := range []struct {
		iface       string
		is, harness bool
		method      string
	}{
		{"sortie.Describer", isDescriber, f.h.CanDescribe(), "CanDescribe"},
		{"sortie.Canceler", isCanceler, f.h.CanCancelRunning(), "CanCancelRunning"},
		{"sortie.ExitWatcher", isExitWatcher, f.h.ReportsExits(), "ReportsExits"},
		{"sortie.Queuer", isQueuer, f.h.QueuesLaunches(), "QueuesLaunches"},
		{"sortie.InvocationLimiter", isLimiter, f.h.LimitsInvocations(), "LimitsInvocations"},
	} {
		if c.is != c.harness {
			t.Errorf("launcher %T implements %s = %v, but %s() = %v", f.launcher, c.iface, c.is, c.method, c.harness)
		}
	}
	if n := f.h.CancelCalls(); n != 0 {
		t.Errorf("CancelCalls() = %d before any run, want 0", n)
	}
}

// checkResult checks that the run completed on attempt n with output.
func checkResult(t *testing.T, run *sortie.Run, n int, output any) {
	t.Helper()
	if run.State != sortie.StateCompleted || run.Attempt != n {
		t.Fatalf("run = %s, want completed on attempt %d", describeRun(run), n)
	}
	want, _ := json.Marshal(output)
	var got, wantV any
	_ = json.Unmarshal(want, &wantV)
	if err := json.Unmarshal(run.Result, &got); err != nil {
		t.Fatalf("run result %q is not JSON: %v", run.Result, err)
	}
	if diff := cmp.Diff(wantV, got); diff != "" {
		t.Errorf("run result (-want +got):\n%s", diff)
	}
}

func testCompletes(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 4, "output": "four events"}, sortie.Policy{})
	run = f.waitRun(run.ID, "the run to settle", false, settled)
	checkResult(t, run, 1, "four events")
	f.waitRef(run.ID, 1)
	evs := f.events(run.ID)
	if diff := cmp.Diff(upTo(4), seqs(evs, 1)); diff != "" || len(evs) != 4 {
		t.Errorf("Events(%s): %d events, attempt 1 seqs (-want +got):\n%s", run.ID, len(evs), diff)
	}
}

func testDuplicateStart(t *testing.T, newHarness func(t *testing.T) Harness) {
	rec := &recorder{invs: make(chan *sortie.Invocation, 4)}
	f := setup(t, newHarness, func(l sortie.Launcher) sortie.Launcher { rec.inner = l; return rec })
	run := f.submit(map[string]any{"events": 3, "interval_ms": 50, "output": "once"}, sortie.Policy{})
	var inv *sortie.Invocation
	select {
	case inv = <-rec.invs:
	case <-f.ctx.Done():
		t.Fatalf("the engine never called Start for run %s: %v", run.ID, f.ctx.Err())
	}
	first := f.waitRef(run.ID, 1)
	second, err := f.launcher.Start(f.ctx, inv) // a duplicate delivery
	if err != nil {
		t.Fatalf("second Start(run %s attempt 1, same launch ID) = %v, want nil", run.ID, err)
	}
	checkRef(t, second, run.ID, 1, inv.LaunchID)
	run = f.waitRun(run.ID, "the run to settle", false, settled)
	checkResult(t, run, 1, "once")
	if f.h.CanDescribe() {
		f.waitPhase(first, "the first delivery to end", notRunning)
		f.waitPhase(second, "the duplicate delivery to end", notRunning)
	}
	if run, _ = f.client.Get(f.ctx, run.ID); len(run.Attempts) != 1 {
		t.Errorf("run has %d attempts after a duplicate Start, want 1", len(run.Attempts))
	}
	evs := f.events(run.ID)
	if diff := cmp.Diff(upTo(3), seqs(evs, 1)); diff != "" || len(evs) != 3 {
		t.Errorf("Events(%s) after a duplicate Start: %d events, attempt 1 seqs (-want +got):\n%s", run.ID, len(evs), diff)
	}
	if extra := len(rec.invs); extra != 0 {
		t.Errorf("the engine called Start %d more times, want once", extra)
	}
}

func testCancelRunning(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	// The lease and the cancel timeout are far longer than the wait, so a
	// cancelled run proves the attempt stopped on the cancel itself (the
	// worker saw it on a heartbeat, or the provider stopped it), not on
	// the lease or cancel-timeout backstops. How fast is a benchmark's
	// question, not a test's.
	backstop := 2 * waitLimit
	run := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20},
		sortie.Policy{LeaseMs: backstop.Milliseconds(), CancelTimeoutMs: backstop.Milliseconds()})
	ref := f.waitRef(run.ID, 1)
	f.waitFor("a tick event of the running attempt", func() (bool, string) {
		n := len(f.events(run.ID))
		return n > 0, "no event yet"
	})
	if _, err := f.client.Cancel(f.ctx, run.ID, "conformance: cancel while running"); err != nil {
		t.Fatalf("Cancel(%s) = %v, want nil", run.ID, err)
	}
	run = f.waitRun(run.ID, "the run to be cancelled (before its lease or cancel timeout could end it)", false, settled)
	if run.State != sortie.StateCancelled || !run.CancelRequested {
		t.Fatalf("run after Cancel = %s, want cancelled", describeRun(run))
	}
	if f.h.CanCancelRunning() && f.h.CanDescribe() {
		f.waitPhase(ref, "the provider to stop the cancelled attempt", notRunning)
	}
	evs := f.events(run.ID)
	if diff := cmp.Diff(upTo(len(evs)), seqs(evs, 1)); diff != "" {
		t.Errorf("Events(%s) of the cancelled attempt, seqs (-want +got):\n%s", run.ID, diff)
	}
}

func testRetryableFailure(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 2, "fail": "transient trouble", "retryable": true, "fail_attempts": 1,
		"output": "second time"}, sortie.Policy{})
	run = f.waitRun(run.ID, "the run to settle, reconciling", true, settled)
	checkResult(t, run, 2, "second time")
	first := run.Attempts[0]
	if first.Outcome != sortie.StateFailed || first.Error == nil || !first.Error.Retryable ||
		!strings.Contains(first.Error.Message, "transient trouble") {
		t.Errorf("attempt 1 = outcome %s error %+v, want failed with the retryable probe error", first.Outcome, first.Error)
	}
	f.waitRef(run.ID, 1)
	f.waitRef(run.ID, 2)
	evs := f.events(run.ID)
	if diff := cmp.Diff([][]int64{upTo(2), upTo(2)}, [][]int64{seqs(evs, 1), seqs(evs, 2)}); diff != "" {
		t.Errorf("Events(%s) seqs of attempts 1 and 2 (-want +got):\n%s", run.ID, diff)
	}
}

func testPermanentFailure(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 1, "fail": "permanent trouble"}, sortie.Policy{})
	run = f.waitRun(run.ID, "the run to settle, reconciling", true, settled)
	if run.State != sortie.StateFailed || run.Attempt != 1 || len(run.Attempts) != 1 {
		t.Fatalf("run = %s with %d attempts, want failed after 1 attempt", describeRun(run), len(run.Attempts))
	}
	if run.Error == nil || run.Error.Retryable || !strings.Contains(run.Error.Message, "permanent trouble") {
		t.Errorf("run error = %+v, want the probe's non-retryable error", run.Error)
	}
	if !strings.Contains(run.Reason, "attempt 1 of") {
		t.Errorf("run reason = %q, want it to name attempt 1", run.Reason)
	}
	if _, err := f.engine.Reconcile(f.ctx); err != nil {
		t.Fatalf("Reconcile() = %v, want nil", err)
	}
	if again, _ := f.client.Get(f.ctx, run.ID); again.Attempt != 1 || again.State != sortie.StateFailed {
		t.Errorf("after Reconcile the failed run = %s, want unchanged", describeRun(again))
	}
}
