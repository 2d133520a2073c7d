package cloudrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/cloudrun"
)

var probeAgents = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}

var testPolicy = sortie.Policy{HeartbeatMs: 200, LeaseMs: 1000, BackoffMs: 50}

func newEngine(tb testing.TB, r *rig) *sortie.Engine {
	tb.Helper()
	e := sortie.NewEngine(r.cp, r.launcher, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

func submit(tb testing.TB, e *sortie.Engine, vars map[string]any, policy sortie.Policy) *sortie.Run {
	tb.Helper()
	b, _ := json.Marshal(vars)
	run, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: b, Policy: policy})
	if err != nil {
		tb.Fatalf("Submit(probe %s) = %v, want nil", b, err)
	}
	return run
}

// waitFor polls cond every 10 ms for at most 60 s.
func waitFor(tb testing.TB, what string, cond func() (bool, string)) {
	tb.Helper()
	testwait.UntilReport(tb, what, 60*time.Second, cond)
}

func waitRun(tb testing.TB, e *sortie.Engine, id sortie.RunID, what string, reconcile bool, cond func(*sortie.Run) bool) *sortie.Run {
	tb.Helper()
	var run *sortie.Run
	waitFor(tb, what, func() (bool, string) {
		if reconcile {
			if _, err := e.Reconcile(context.Background()); err != nil {
				tb.Fatalf("Reconcile() = %v, want nil", err)
			}
		}
		var err error
		if run, err = e.Get(context.Background(), id); err != nil {
			tb.Fatalf("Get(%s) = %v, want nil", id, err)
		}
		return cond(run), string(run.State) + " " + run.Reason
	})
	return run
}

func settled(r *sortie.Run) bool { return r.State.Terminal() || r.State.Interrupted() }

// waitEnded calls Describe until the phase is not running.
func waitEnded(tb testing.TB, l *cloudrun.JobsLauncher, ref sortie.Ref) sortie.Status {
	tb.Helper()
	var st sortie.Status
	waitFor(tb, "execution "+ref.ID+" to end", func() (bool, string) {
		var err error
		st, err = l.Describe(context.Background(), ref)
		return err == nil && st.Phase != sortie.PhaseRunning, st.Reason
	})
	return st
}

// A run launches one execution whose RunJobRequest carries the invocation
// in the container's environment, one task and a timeout from the
// deadline, and completes.
func TestLaunchAndComplete(t *testing.T) {
	r := newRig(t)
	e := newEngine(t, r)
	run := submit(t, e, map[string]any{"events": 2, "output": "done"}, sortie.Policy{})
	run = waitRun(t, e, run.ID, "the run to settle", false, settled)
	if run.State != sortie.StateCompleted || string(run.Result) != `"done"` {
		t.Fatalf("run = %s result %s, want completed with \"done\"", run.State, run.Result)
	}
	reqs := r.fake.requests()
	if len(reqs) != 1 {
		t.Fatalf("RunJob called %d times, want 1", len(reqs))
	}
	o := reqs[0].GetOverrides()
	env := map[string]string{}
	for _, v := range o.GetContainerOverrides()[0].GetEnv() {
		env[v.GetName()] = v.GetValue()
	}
	inv, err := sortie.DecodeInvocation([]byte(env[fncloudrun.EnvInvocation]))
	if err != nil {
		t.Fatalf("RunJobRequest %s value does not decode: %v", fncloudrun.EnvInvocation, err)
	}
	got := []any{reqs[0].GetName(), o.GetTaskCount(), env[fncloudrun.EnvMode], inv.RunID, inv.Attempt, inv.LaunchID}
	want := []any{testJob, int32(1), fncloudrun.ModeJob, run.ID, 1, run.Attempts[0].LaunchID}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunJobRequest (name, task count, mode, run, attempt, launch ID) (-want +got):\n%s", diff)
	}
	if secs := o.GetTimeout().AsDuration(); secs < time.Second || time.Now().Add(secs).UnixMilli() < inv.DeadlineMs {
		t.Errorf("RunJobRequest timeout = %v, want at least until the deadline %d", secs, inv.DeadlineMs)
	}
	ref := *run.Attempts[0].Ref
	if st := waitEnded(t, r.launcher, ref); st.Phase != sortie.PhaseSucceeded {
		t.Errorf("Describe(%s) = %+v, want succeeded", ref.ID, st)
	}
}

// Cancel mid-run: CancelExecution stops the container, the execution
// reads as cancelled and the run is cancelled.
func TestCancelMidRun(t *testing.T) {
	r := newRig(t)
	e := newEngine(t, r)
	run := submit(t, e, map[string]any{"until_cancelled": true, "interval_ms": 20}, sortie.Policy{})
	waitFor(t, "a tick event", func() (bool, string) {
		evs, _ := e.Events(context.Background(), run.ID, sortie.Cursor{}, 10)
		return len(evs) > 0, "no event"
	})
	run = waitRun(t, e, run.ID, "the Ref", false, func(r *sortie.Run) bool { return r.Attempts[0].Ref != nil })
	ref := *run.Attempts[0].Ref
	if _, err := e.Cancel(context.Background(), run.ID, "test: cancel mid-run"); err != nil {
		t.Fatalf("Cancel(%s) = %v, want nil", run.ID, err)
	}
	st := waitEnded(t, r.launcher, ref)
	if st.Phase != sortie.PhaseCancelled || !strings.HasPrefix(st.Reason, "cancelled") {
		t.Errorf("Describe(cancelled execution) = %+v, want cancelled, reason cancelled", st)
	}
	run = waitRun(t, e, run.ID, "the run to be cancelled", false, settled)
	if run.State != sortie.StateCancelled {
		t.Errorf("run after Cancel = %s %q, want cancelled", run.State, run.Reason)
	}
	if err := r.launcher.Cancel(context.Background(), ref); err != nil {
		t.Errorf("Cancel(ended execution %s) = %v, want nil (idempotent)", ref.ID, err)
	}
}

// An execution that failed without delivering a result (the container
// crashed) reads as failed, and the reconciler fails the run with the
// execution's own reason, not a lease expiry.
func TestFailedExecutionReconciled(t *testing.T) {
	r := newRig(t)
	e := newEngine(t, r)
	run := submit(t, e, map[string]any{"events": 1, "crash_attempts": 1}, sortie.Policy{MaxAttempts: 1})
	run = waitRun(t, e, run.ID, "the Ref", false, func(r *sortie.Run) bool { return r.Attempts[0].Ref != nil })
	ref := *run.Attempts[0].Ref
	st := waitEnded(t, r.launcher, ref)
	if st.Phase != sortie.PhaseFailed || !strings.Contains(st.Reason, "exit code 97") {
		t.Errorf("Describe(crashed execution) = %+v, want failed with exit code 97", st)
	}
	run = waitRun(t, e, run.ID, "the reconciler to fail the run", true, settled)
	a := run.Attempts[0]
	if run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != sortie.ErrorTypeExited ||
		!strings.Contains(run.Error.Message, "exit code 97") || a.Exit == nil || a.Exit.Phase != sortie.PhaseFailed {
		t.Errorf("run = %s error %+v exit %+v, want failed with %s naming exit code 97", run.State, run.Error, a.Exit, sortie.ErrorTypeExited)
	}
}

// An invocation over 32 KiB of JSON is refused before RunJob, naming the
// limit.
func TestOversizeRefused(t *testing.T) {
	r := newRig(t)
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: "01JC0000000000000000000000", Attempt: 1,
		LaunchID: "launch-1", Agent: probeAgents["probe"], DeadlineMs: time.Now().Add(time.Minute).UnixMilli(),
		HeartbeatMs: 200, LeaseMs: 1000, Report: sortie.Report{Mode: sortie.ReportControlPlane},
		Variables: json.RawMessage(`{"pad":"` + strings.Repeat("x", 40<<10) + `"}`)}
	_, err := r.launcher.Start(context.Background(), inv)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "invocation" || !strings.Contains(ve.Reason, "32768") {
		t.Fatalf("Start(invocation of 40 KiB) = %v, want a ValidationError on invocation naming 32768", err)
	}
	if n := len(r.fake.requests()); n != 0 {
		t.Errorf("RunJob called %d times for a refused invocation, want 0", n)
	}
}

// A second launcher (another process) starting the same launch ID makes a
// second execution; its container's claim is refused, it runs nothing and
// its task succeeds, and the run has one attempt with its events once.
func TestDuplicateExecutionAcrossLaunchers(t *testing.T) {
	r := newRig(t)
	e := newEngine(t, r)
	run := submit(t, e, map[string]any{"events": 3, "interval_ms": 20, "output": "once"}, sortie.Policy{})
	waitFor(t, "the first RunJob", func() (bool, string) { return len(r.fake.requests()) == 1, "no RunJob yet" })
	env := r.fake.requests()[0].GetOverrides().GetContainerOverrides()[0].GetEnv()
	var raw string
	for _, v := range env {
		if v.GetName() == fncloudrun.EnvInvocation {
			raw = v.GetValue()
		}
	}
	inv, err := sortie.DecodeInvocation([]byte(raw))
	if err != nil {
		t.Fatalf("first RunJobRequest's invocation does not decode: %v", err)
	}
	other := jobsLauncher(t, r.fake)
	ref, err := other.Start(context.Background(), inv)
	if err != nil {
		t.Fatalf("Start(same launch ID, second launcher) = %v, want nil", err)
	}
	if st := waitEnded(t, other, ref); st.Phase != sortie.PhaseSucceeded {
		t.Errorf("Describe(duplicate execution %s) = %+v, want succeeded (claim refused, nothing run)", ref.ID, st)
	}
	run = waitRun(t, e, run.ID, "the run to settle with its Ref", false, func(r *sortie.Run) bool {
		return settled(r) && r.Attempts[0].Ref != nil
	})
	if run.State != sortie.StateCompleted || len(run.Attempts) != 1 || run.Attempts[0].Ref.ID == ref.ID {
		t.Fatalf("run = %s with %d attempts (first execution %s), want completed once by the first execution", run.State, len(run.Attempts), run.Attempts[0].Ref.ID)
	}
	evs, err := e.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	if err != nil || len(evs) != 3 {
		t.Errorf("Events(%s) = %d events, %v; want 3", run.ID, len(evs), err)
	}
}
