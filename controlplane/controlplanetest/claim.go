package controlplanetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func testClaimOnce(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	_, lid := f.launch(run.ID, 1, T0+1)
	claimOnce(t, f, []sortie.ControlPlane{f.cp}, run.ID, lid)
}

// claimOnce has 50 goroutines, spread over cps, claim attempt 1 at once and
// checks that exactly one won and the others got ErrConflict.
func claimOnce(t *testing.T, f *fixture, cps []sortie.ControlPlane, id sortie.RunID, lid string) {
	const n = 50
	var wins atomic.Int32
	errs := make([]error, n)
	parallel(n, func(i int) {
		c := claimOf(id, 1, lid, T0+2)
		c.Owner = fmt.Sprintf("worker-%d", i)
		_, err := cps[i%len(cps)].Claim(f.ctx, c)
		if err == nil {
			wins.Add(1)
		} else if !errors.Is(err, sortie.ErrConflict) {
			errs[i] = err
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Claim(worker-%d) = %v, want success or ErrConflict", i, err)
		}
	}
	if w := wins.Load(); w != 1 {
		t.Fatalf("%d concurrent Claim calls of attempt 1: %d succeeded, want exactly 1", n, w)
	}
	run := f.get(id)
	if cur := run.Current(); run.State != sortie.StateWorking || cur == nil || !cur.Claimed() || cur.Owner == "" {
		t.Errorf("Get after the claim race = state %s attempt %+v, want working with one owner", run.State, cur)
	}
}

func testClaimConditions(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	_, err := f.cp.Claim(f.ctx, claimOf(run.ID, 1, sortie.NewLaunchID(), T0+1))
	wantErr(t, "Claim(attempt 1 before RecordLaunch)", err, sortie.ErrConflict)
	f.unchanged("a refused Claim", run.ID, run)

	launched, lid := f.launch(run.ID, 1, T0+2)
	_, err = f.cp.Claim(f.ctx, claimOf(run.ID, 1, sortie.NewLaunchID(), T0+3))
	wantErr(t, "Claim(attempt 1, wrong launch ID)", err, sortie.ErrConflict)
	_, err = f.cp.Claim(f.ctx, claimOf(run.ID, 2, lid, T0+3))
	wantErr(t, "Claim(attempt 2, not launched)", err, sortie.ErrConflict)
	f.unchanged("refused Claims", run.ID, launched)

	claimed := f.claim(run.ID, 1, lid, T0+4)
	if claimed.State != sortie.StateWorking || claimed.LeaseExpiresMs != T0+4+claimed.Policy.LeaseMs {
		t.Errorf("Claim(attempt 1) = state %s lease %d, want working, lease %d", claimed.State, claimed.LeaseExpiresMs, T0+4+claimed.Policy.LeaseMs)
	}
	_, err = f.cp.Claim(f.ctx, claimOf(run.ID, 1, lid, T0+5))
	wantErr(t, "Claim(attempt 1 again)", err, sortie.ErrConflict)
	f.unchanged("a second Claim", run.ID, claimed)
}

func testRecordLaunchConditions(t *testing.T, f *fixture) {
	run := NewRun(T0)
	run.Policy.MaxAttempts = 2
	run = f.reserve(run, T0)
	launch := func(call string, attempt int, want error) {
		t.Helper()
		before := f.get(run.ID)
		_, err := f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: attempt, LaunchID: sortie.NewLaunchID(), NowMs: T0 + 50})
		wantErr(t, call, err, want)
		f.unchanged(call, run.ID, before)
	}
	launch("RecordLaunch(attempt 2 of a new run)", 2, sortie.ErrConflict)
	got, lid := f.launch(run.ID, 1, T0+1)
	if cur := got.Current(); got.Attempt != 1 || cur == nil || cur.LaunchID != lid || got.LeaseExpiresMs != T0+1+got.Policy.StartTimeoutMs {
		t.Errorf("RecordLaunch(attempt 1) = attempt %d %+v lease %d, want attempt 1 with launch %s, lease %d",
			got.Attempt, cur, got.LeaseExpiresMs, lid, T0+1+got.Policy.StartTimeoutMs)
	}
	launch("RecordLaunch(attempt 1 again)", 1, sortie.ErrConflict)
	launch("RecordLaunch(attempt 2 while attempt 1 is launched)", 2, sortie.ErrConflict)
	f.claim(run.ID, 1, lid, T0+2)
	launch("RecordLaunch(attempt 2 while attempt 1 is claimed)", 2, sortie.ErrConflict)
	run = f.finish(run.ID, 1, lid, failure("flaky", true), T0+3)
	launch("RecordLaunch(attempt 3 after attempt 1)", 3, sortie.ErrConflict)
	run, lid = f.next(run, T0+4)
	run = f.finish(run.ID, 2, lid, failure("flaky", true), T0+6)
	if run.State != sortie.StateFailed {
		t.Errorf("Finish(attempt 2 of 2, retryable error) = state %s, want failed (no attempts left)", run.State)
	}
	launch("RecordLaunch(attempt 3 of 2)", 3, sortie.ErrTerminal)

	cancelled, lid := f.working(T0 + 10)
	_, err := f.cp.RequestCancel(f.ctx, cancelled.ID, "stop")
	must(t, "RequestCancel(claimed run)", err)
	run = cancelled
	launch("RecordLaunch(attempt 2 after RequestCancel)", 2, sortie.ErrCancelRequested)
	f.finish(cancelled.ID, 1, lid, failure("flaky", true), T0+11)
	launch("RecordLaunch(attempt 2 of a cancelled run)", 2, sortie.ErrTerminal)
}

func testSetRef(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	_, lid := f.launch(run.ID, 1, T0+1)
	ref := sortie.Ref{Provider: "local", Resource: "probe", ID: "4242", RunID: run.ID, Attempt: 1, LaunchID: lid,
		Detail: map[string]string{"start": "1"}}
	stored, err := f.cp.SetRef(f.ctx, run.ID, 1, lid, ref)
	must(t, "SetRef(attempt 1)", err)
	got := f.get(run.ID)
	if diff := cmp.Diff(&ref, got.Current().Ref); diff != "" {
		t.Errorf("Get after SetRef: attempt 1's ref (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got, stored); diff != "" {
		t.Errorf("SetRef returned a run other than the one stored (-stored +returned):\n%s", diff)
	}
	_, err = f.cp.SetRef(f.ctx, run.ID, 1, sortie.NewLaunchID(), sortie.Ref{Provider: "local", ID: "1"})
	wantErr(t, "SetRef(attempt 1, wrong launch ID)", err, sortie.ErrConflict)
	_, err = f.cp.SetRef(f.ctx, run.ID, 2, lid, sortie.Ref{Provider: "local", ID: "1"})
	wantErr(t, "SetRef(attempt 2, not launched)", err, sortie.ErrConflict)
	f.unchanged("refused SetRef calls", run.ID, got)
}
