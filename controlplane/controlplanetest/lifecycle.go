package controlplanetest

import (
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// A cancel request brings a claimed attempt's lease forward to the cancel
// deadline (the request's time plus the policy's cancel timeout), and
// heartbeats after it no longer extend the lease: the run is due for the
// reconciler then, whatever the lease.
func testCancelDeadline(t *testing.T, f *fixture) {
	run := NewRun(T0)
	run.Policy.LeaseMs, run.Policy.CancelTimeoutMs = 3_600_000, 500
	run = f.reserve(run, T0)
	_, lid := f.launch(run.ID, 1, T0+1)
	now := time.Now().UnixMilli() // RequestCancel stamps with the control plane's clock
	f.claim(run.ID, 1, lid, now)
	before := time.Now().UnixMilli()
	got, err := f.cp.RequestCancel(f.ctx, run.ID, "deadline")
	after := time.Now().UnixMilli()
	must(t, "RequestCancel(claimed run)", err)
	if got.LeaseExpiresMs < before+500 || got.LeaseExpiresMs > after+500 {
		t.Errorf("RequestCancel(claimed run, cancel timeout 500 ms) lease = %d, want within [%d, %d] (the request's time + 500 ms, not the 1 h lease)",
			got.LeaseExpiresMs, before+500, after+500)
	}
	beat, err := f.cp.Heartbeat(f.ctx, claimOf(run.ID, 1, lid, after+100))
	must(t, "Heartbeat after RequestCancel", err)
	if beat.LeaseExpiresMs != got.LeaseExpiresMs || !beat.CancelRequested {
		t.Errorf("Heartbeat after RequestCancel = lease %d cancel %v, want lease still %d and cancel requested", beat.LeaseExpiresMs, beat.CancelRequested, got.LeaseExpiresMs)
	}
	again, err := f.cp.RequestCancel(f.ctx, run.ID, "again")
	must(t, "RequestCancel again", err)
	if again.LeaseExpiresMs != got.LeaseExpiresMs {
		t.Errorf("RequestCancel again moved the deadline to %d, want %d (the first request's)", again.LeaseExpiresMs, got.LeaseExpiresMs)
	}
	expired, err := f.cp.Expired(f.ctx, got.LeaseExpiresMs, 100)
	must(t, "Expired(at the cancel deadline)", err)
	if !containsRun(expired, run.ID) {
		t.Errorf("Expired(at the cancel deadline) = %v, want run %s", ids(expired), run.ID)
	}
}

func containsRun(runs []*sortie.Run, id sortie.RunID) bool {
	for _, r := range runs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// RecordLaunch takes the attempt's own start timeout and first check time;
// Defer moves the next look, never past an unclaimed attempt's start
// deadline, and refuses what it must.
func testDefer(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	lid := sortie.NewLaunchID()
	got, err := f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid,
		StartTimeoutMs: 9000, CheckMs: T0 + 100, NowMs: T0 + 1})
	must(t, "RecordLaunch(start timeout 9000, check at T0+100)", err)
	if cur := got.Current(); cur.StartByMs != T0+9001 || got.LeaseExpiresMs != T0+100 {
		t.Errorf("RecordLaunch = start by %d, lease %d; want start by T0+9001, lease T0+100", cur.StartByMs-T0, got.LeaseExpiresMs-T0)
	}
	reserved, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: NewRun(T0), LaunchID: sortie.NewLaunchID(),
		StartTimeoutMs: 7000, CheckMs: T0 + 50, NowMs: T0})
	must(t, "Reserve(with a launch, start timeout 7000, check at T0+50)", err)
	if cur := reserved.Current(); cur == nil || cur.StartByMs != T0+7000 || reserved.LeaseExpiresMs != T0+50 {
		t.Errorf("Reserve(with a launch) = attempt %+v, lease T0+%d; want start by T0+7000, lease T0+50", cur, reserved.LeaseExpiresMs-T0)
	}
	deferTo := func(call string, d sortie.Deferral, want error) *sortie.Run {
		t.Helper()
		d.RunID, d.Attempt, d.LaunchID = run.ID, 1, lid
		before := f.get(run.ID)
		out, err := f.cp.Defer(f.ctx, d)
		if want != nil {
			wantErr(t, call, err, want)
			f.unchanged(call, run.ID, before)
			return nil
		}
		must(t, call, err)
		return out
	}
	if r := deferTo("Defer(unclaimed, to T0+500)", sortie.Deferral{UntilMs: T0 + 500, NowMs: T0 + 100}, nil); r.LeaseExpiresMs != T0+500 {
		t.Errorf("Defer(unclaimed, to T0+500) lease = T0+%d, want T0+500", r.LeaseExpiresMs-T0)
	}
	if r := deferTo("Defer(unclaimed, past the start deadline)", sortie.Deferral{UntilMs: T0 + 60_000, NowMs: T0 + 500}, nil); r.LeaseExpiresMs != T0+9001 {
		t.Errorf("Defer(unclaimed, to T0+60000) lease = T0+%d, want the start deadline T0+9001", r.LeaseExpiresMs-T0)
	}
	deferTo("Defer(stale version)", sortie.Deferral{UntilMs: T0 + 700, IfVersion: 1, NowMs: T0 + 600}, sortie.ErrConflict)
	f.claim(run.ID, 1, lid, T0+700)
	if r := deferTo("Defer(claimed, a lease of grace)", sortie.Deferral{UntilMs: T0 + 60_000, NowMs: T0 + 800}, nil); r.LeaseExpiresMs != T0+60_000 {
		t.Errorf("Defer(claimed, to T0+60000) lease = T0+%d, want T0+60000", r.LeaseExpiresMs-T0)
	}
	_, err = f.cp.RequestCancel(f.ctx, run.ID, "stop")
	must(t, "RequestCancel", err)
	cancelBy := f.get(run.ID).CancelRequestedMs + sortie.DefaultCancelTimeoutMs
	if r := deferTo("Defer(cancel requested)", sortie.Deferral{UntilMs: cancelBy + 60_000, NowMs: cancelBy - 1000}, nil); r.LeaseExpiresMs != cancelBy {
		t.Errorf("Defer(cancel requested, far) lease = %d, want the cancel deadline %d", r.LeaseExpiresMs, cancelBy)
	}
	deferTo("Defer(cancel requested, past its deadline)", sortie.Deferral{UntilMs: cancelBy + 1000, NowMs: cancelBy}, sortie.ErrCancelRequested)
	f.finish(run.ID, 1, lid, failure(sortie.ErrorTypeCancelled, false), T0+1000)
	deferTo("Defer(terminal run)", sortie.Deferral{UntilMs: T0 + 90_000, NowMs: T0 + 1100}, sortie.ErrTerminal)

	ended, elid := f.working(T0 + 2000)
	f.finish(ended.ID, 1, elid, failure("flaky", true), T0+2100)
	before := f.get(ended.ID)
	_, err = f.cp.Defer(f.ctx, sortie.Deferral{RunID: ended.ID, Attempt: 1, LaunchID: elid, UntilMs: T0 + 90_000, NowMs: T0 + 2200})
	wantErr(t, "Defer(ended attempt)", err, sortie.ErrConflict)
	f.unchanged("Defer(ended attempt)", ended.ID, before)
}

// The run-level error of a failed attempt is the run's until its next
// attempt is launched, and stays on that attempt; Finish stores what the
// launcher said of the compute on Attempt.Exit.
func testRetryClearsRunError(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	code := 137
	exit := &sortie.Status{Phase: sortie.PhaseFailed, ExitCode: &code, Signal: "SIGKILL", Reason: "out of memory"}
	got, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: failure(sortie.ErrorTypeExited, true), Exit: exit, NowMs: T0 + 10})
	must(t, "Finish(attempt 1, exited)", err)
	if got.Error == nil || got.Attempts[0].Exit == nil || got.Attempts[0].Exit.Signal != "SIGKILL" || *got.Attempts[0].Exit.ExitCode != 137 {
		t.Errorf("Finish(exited) = run error %+v, attempt 1 exit %+v; want the error on the run and the exit on the attempt", got.Error, got.Attempts[0].Exit)
	}
	next, _ := f.launch(run.ID, 2, T0+5000)
	if next.Error != nil || next.Attempts[0].Error == nil || next.Attempts[0].Error.Type != sortie.ErrorTypeExited {
		t.Errorf("RecordLaunch(attempt 2) = run error %+v, attempt 1 error %+v; want no run error, attempt 1's kept", next.Error, next.Attempts[0].Error)
	}
}
