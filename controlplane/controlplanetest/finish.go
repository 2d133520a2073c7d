package controlplanetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

func testFinishFirstWins(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	const n = 20
	runs := make([]*sortie.Run, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		runs[i], errs[i] = f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
			Outcome: result(fmt.Sprintf(`{"writer":%d}`, i)), NowMs: T0 + 3})
	})
	final := f.get(run.ID)
	if final.State != sortie.StateCompleted || final.Version != run.Version+1 {
		t.Fatalf("Get after %d concurrent Finish calls = state %s version %d, want completed at version %d (one write)",
			n, final.State, final.Version, run.Version+1)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Finish(writer %d) = %v, want nil (a later finish is a no-op)", i, errs[i])
			continue
		}
		if diff := cmp.Diff(final, runs[i]); diff != "" {
			t.Errorf("Finish(writer %d) returned a run other than the stored winner (-want +got):\n%s", i, diff)
		}
	}
}

// ended is a terminal run and the launch ID of its last attempt.
type ended struct {
	run *sortie.Run
	lid string
}

// terminalRuns returns a completed, a failed and a cancelled run by state.
func terminalRuns(f *fixture) map[string]ended {
	out := map[string]ended{}
	run, lid := f.working(T0)
	out["completed"] = ended{f.finish(run.ID, 1, lid, result(`{"ok":true}`), T0+3), lid}
	run, lid = f.working(T0 + 10)
	out["failed"] = ended{f.finish(run.ID, 1, lid, failure("fatal", false), T0+13), lid}
	run, lid = f.working(T0 + 20)
	_, err := f.cp.RequestCancel(f.ctx, run.ID, "stop")
	must(f.t, "RequestCancel(claimed run)", err)
	out["cancelled"] = ended{f.finish(run.ID, 1, lid, failure(sortie.ErrorTypeCancelled, false), T0+23), lid}
	return out
}

func testTerminalNeverChanges(t *testing.T, f *fixture) {
	for state, tr := range terminalRuns(f) {
		run, lid := tr.run, tr.lid
		if string(run.State) != state {
			t.Fatalf("setup: run %s is %s, want %s", run.ID, run.State, state)
		}
		id, at := run.ID, int64(T0+100)
		got, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: id, Attempt: 1, LaunchID: lid, Outcome: result(`{"late":true}`), NowMs: at})
		if err != nil || got.State != run.State || got.Version != run.Version {
			t.Errorf("Finish(%s run again) = state %v err %v, want the stored run (%s, version %d) and nil", state, stateOf(got), err, run.State, run.Version)
		}
		_, err = f.cp.Heartbeat(f.ctx, claimOf(id, 1, lid, at))
		wantTerminal(t, fmt.Sprintf("Heartbeat(%s run)", state), err, id, run.State)
		_, err = f.cp.Claim(f.ctx, claimOf(id, 1, lid, at))
		wantTerminal(t, fmt.Sprintf("Claim(%s run)", state), err, id, run.State)
		_, err = f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: id, Attempt: 2, LaunchID: sortie.NewLaunchID(), NowMs: at})
		wantTerminal(t, fmt.Sprintf("RecordLaunch(%s run, attempt 2)", state), err, id, run.State)
		_, err = f.cp.AppendEvents(f.ctx, sortie.Append{RunID: id, Attempt: 1, LaunchID: lid, Events: []sortie.Event{event("late")}, NowMs: at})
		wantTerminal(t, fmt.Sprintf("AppendEvents(%s run)", state), err, id, run.State)
		_, err = f.cp.Resume(f.ctx, id, json.RawMessage(`{}`))
		wantTerminal(t, fmt.Sprintf("Resume(%s run)", state), err, id, run.State)
		got, err = f.cp.RequestCancel(f.ctx, id, "too late")
		if err != nil || got.Version != run.Version || got.State != run.State {
			t.Errorf("RequestCancel(%s run) = state %v err %v, want the run unchanged and nil", state, stateOf(got), err)
		}
		f.unchanged(fmt.Sprintf("calls on a %s run", state), id, run)
		if len(f.events(id, sortie.Cursor{}, 0)) != 0 {
			t.Errorf("Events(%s run) not empty after a refused append", state)
		}
		setRefAfterEnd(t, f, run, lid)
	}
}

// setRefAfterEnd checks the one change a terminal run takes: the launch
// reference of an attempt whose Start returned after the attempt ended
// (some services run the whole attempt inside Start). Only the ref changes.
func setRefAfterEnd(t *testing.T, f *fixture, run *sortie.Run, lid string) {
	ref := sortie.Ref{Provider: "local", ID: "late-ref", RunID: run.ID, Attempt: 1, LaunchID: lid}
	_, err := f.cp.SetRef(f.ctx, run.ID, 1, lid, ref)
	must(t, "SetRef(ended attempt)", err)
	got := f.get(run.ID)
	want := run.Clone()
	want.Attempts[0].Ref = &ref
	ignore := cmpopts.IgnoreFields(sortie.Run{}, "Version", "UpdatedMs")
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("SetRef on a %s run changed more than the ref (-want +got):\n%s", run.State, diff)
	}
}

func stateOf(r *sortie.Run) any {
	if r == nil {
		return nil
	}
	return fmt.Sprintf("%s v%d", r.State, r.Version)
}

func testRetryBackoff(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	o := failure("flaky", true)
	got := f.finish(run.ID, 1, lid, o, T0+100)
	due := T0 + 100 + controlplane.Backoff(got, 1)
	if got.State != sortie.StateWorking || got.LeaseExpiresMs != due {
		t.Errorf("Finish(attempt 1 of 3, retryable error) = state %s lease %d, want working, lease %d (backoff)", got.State, got.LeaseExpiresMs, due)
	}
	if diff := cmp.Diff(o.Error, got.Error); diff != "" {
		t.Errorf("Finish(retryable error): run error (-want +got):\n%s", diff)
	}
	if cur := got.Current(); !cur.Ended() || cur.Outcome != sortie.StateFailed {
		t.Errorf("Finish(retryable error): attempt 1 = %+v, want ended with outcome failed", cur)
	}
	expired := func(nowMs int64) []sortie.RunID {
		runs, err := f.cp.Expired(f.ctx, nowMs, 0)
		must(t, "Expired", err)
		return ids(runs)
	}
	if got := expired(due - 1); len(got) != 0 {
		t.Errorf("Expired(before the backoff ends) = %v, want none", got)
	}
	if diff := cmp.Diff([]sortie.RunID{run.ID}, expired(due)); diff != "" {
		t.Errorf("Expired(when the backoff ends) (-want +got):\n%s", diff)
	}
	next, _ := f.next(got, due)
	if next.Attempt != 2 || next.State != sortie.StateWorking {
		t.Errorf("after the retry, run = attempt %d state %s, want attempt 2 working", next.Attempt, next.State)
	}
}

func testNonRetryable(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	o := failure("fatal", false)
	got := f.finish(run.ID, 1, lid, o, T0+100)
	if got.State != sortie.StateFailed || got.LeaseExpiresMs != 0 || got.Reason == "" {
		t.Errorf("Finish(non-retryable error) = state %s lease %d reason %q, want failed, no lease, a reason", got.State, got.LeaseExpiresMs, got.Reason)
	}
	if diff := cmp.Diff(o.Error, got.Error); diff != "" {
		t.Errorf("Finish(non-retryable error): run error (-want +got):\n%s", diff)
	}
	run, lid = f.working(T0 + 200)
	got = f.finish(run.ID, 1, lid, failure(sortie.ErrorTypeRejected, false), T0+300)
	if got.State != sortie.StateRejected {
		t.Errorf("Finish(error of type rejected) = state %s, want rejected", got.State)
	}
}

func testFinishIfVersion(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	seen := run.Version // what a reconciler read
	beat, err := f.cp.Heartbeat(f.ctx, claimOf(run.ID, 1, lid, T0+10))
	must(t, "Heartbeat", err)
	if beat.Version <= seen || beat.LeaseExpiresMs != T0+10+run.Policy.LeaseMs {
		t.Errorf("Heartbeat = version %d lease %d, want version > %d and lease %d", beat.Version, beat.LeaseExpiresMs, seen, T0+10+run.Policy.LeaseMs)
	}
	_, err = f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, IfVersion: seen,
		Outcome: failure(sortie.ErrorTypeLeaseExpired, true), NowMs: T0 + 20})
	wantErr(t, fmt.Sprintf("Finish(IfVersion %d after a heartbeat)", seen), err, sortie.ErrConflict)
	f.unchanged("a Finish that lost to a heartbeat", run.ID, beat)
	_, err = f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(),
		Outcome: result(`1`), NowMs: T0 + 21})
	wantErr(t, "Finish(wrong launch ID)", err, sortie.ErrConflict)
	got, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, IfVersion: beat.Version,
		Outcome: result(`1`), NowMs: T0 + 22})
	if err != nil || got.State != sortie.StateCompleted {
		t.Errorf("Finish(IfVersion %d, current) = state %v err %v, want completed", beat.Version, stateOf(got), err)
	}
}
