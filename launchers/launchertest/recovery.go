package launchertest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

// crashExitCode is the exit status of a probe worker that crashes.
const crashExitCode = 97

// crashErrorType is the error type a crashed attempt ends with: what the
// launcher reports or describes of the compute when it can, else the
// lease's expiry.
func crashErrorType(h Harness) string {
	if h.ReportsExits() || h.CanDescribe() {
		return sortie.ErrorTypeExited
	}
	return sortie.ErrorTypeLeaseExpired
}

func testCrashRetried(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 3, "crash_attempts": 1, "output": "survived"}, sortie.Policy{})
	run = f.waitRun(run.ID, "the crash to end attempt 1 and attempt 2 to settle, reconciling", true, settled)
	checkResult(t, run, 2, "survived")
	if e, want := run.Attempts[0].Error, crashErrorType(f.h); e == nil || e.Type != want {
		t.Errorf("attempt 1 error = %+v, want type %s", e, want)
	}
	evs := f.events(run.ID)
	if diff := cmp.Diff([][]int64{upTo(3), upTo(3)}, [][]int64{seqs(evs, 1), seqs(evs, 2)}); diff != "" {
		t.Errorf("Events(%s) seqs of the crashed attempt 1 and of attempt 2 (-want +got):\n%s", run.ID, diff)
	}
	if f.h.CanDescribe() {
		ref := f.waitRef(run.ID, 1)
		st := f.waitPhase(ref, "the crashed worker to be gone", notRunning)
		if st.Phase == sortie.PhaseSucceeded || (st.ExitCode != nil && *st.ExitCode != crashExitCode) {
			t.Errorf("Describe(crashed attempt 1) = %+v, want failed (exit %d) or not-found", st, crashExitCode)
		}
	}
}

func testCrashExhausted(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 1, "crash_attempts": 100}, sortie.Policy{MaxAttempts: 2})
	run = f.waitRun(run.ID, "both attempts to crash and the run to fail, reconciling", true, settled)
	if run.State != sortie.StateFailed || run.Attempt != 2 {
		t.Fatalf("run = %s, want failed after attempt 2", describeRun(run))
	}
	if want := crashErrorType(f.h); !strings.Contains(run.Reason, "attempt 2 of 2") || !strings.Contains(run.Reason, want) {
		t.Errorf("run reason = %q, want it to name attempt 2 of 2 and %s", run.Reason, want)
	}
	evs := f.events(run.ID)
	if diff := cmp.Diff([][]int64{upTo(1), upTo(1)}, [][]int64{seqs(evs, 1), seqs(evs, 2)}); diff != "" {
		t.Errorf("Events(%s) seqs of the two crashed attempts (-want +got):\n%s", run.ID, diff)
	}
}

func testInterrupt(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	run := f.submit(map[string]any{"events": 1, "interrupt": "input-required"}, sortie.Policy{})
	run = f.waitRun(run.ID, "the run to ask for input", false, settled)
	if run.State != sortie.StateInputRequired || run.Interrupt == nil || run.Interrupt.State != sortie.StateInputRequired {
		t.Fatalf("run = %s interrupt %+v, want input-required", describeRun(run), run.Interrupt)
	}
	input := json.RawMessage(`{"answer":"forty-two"}`)
	if _, err := f.client.Resume(f.ctx, run.ID, input); err != nil {
		t.Fatalf("Resume(%s, %s) = %v, want nil", run.ID, input, err)
	}
	run = f.waitRun(run.ID, "the resumed run to settle", false, settled)
	// probe answers a resume with the input and the interrupt's checkpoint.
	checkResult(t, run, 2, map[string]any{"resumed_with": input, "checkpoint": map[string]int{"step": 1}})
	f.waitRef(run.ID, 2)
	evs := f.events(run.ID)
	if diff := cmp.Diff(upTo(1), seqs(evs, 1)); diff != "" {
		t.Errorf("Events(%s) seqs of the interrupted attempt (-want +got):\n%s", run.ID, diff)
	}
}

func testDescribe(t *testing.T, newHarness func(t *testing.T) Harness) {
	f := setup(t, newHarness, nil)
	live := f.submit(map[string]any{"until_cancelled": true, "interval_ms": 20}, sortie.Policy{})
	ref := f.waitRef(live.ID, 1)
	f.waitFor("a tick event of the running attempt", func() (bool, string) {
		return len(f.events(live.ID)) > 0, "no event yet"
	})
	if st := f.waitPhase(ref, "Describe to answer", func(sortie.Status) bool { return true }); st.Phase != sortie.PhaseRunning {
		t.Errorf("Describe(running attempt) = %+v, want running", st)
	}
	if _, err := f.client.Cancel(f.ctx, live.ID, "conformance: describe"); err != nil {
		t.Fatalf("Cancel(%s) = %v, want nil", live.ID, err)
	}
	f.waitRun(live.ID, "the run to be cancelled", false, settled)

	done := f.submit(map[string]any{"events": 1, "output": "described"}, sortie.Policy{})
	done = f.waitRun(done.ID, "the run to settle", false, settled)
	checkResult(t, done, 1, "described")
	st := f.waitPhase(f.waitRef(done.ID, 1), "the completed attempt to end", notRunning)
	if st.Phase != sortie.PhaseSucceeded || (st.ExitCode != nil && *st.ExitCode != 0) {
		t.Errorf("Describe(completed attempt) = %+v, want succeeded", st)
	}
}
