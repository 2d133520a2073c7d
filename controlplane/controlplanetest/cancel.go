package controlplanetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func testCancelSticky(t *testing.T, f *fixture) {
	for i, tc := range []struct {
		name    string
		outcome sortie.Outcome
	}{
		{"result", result(`{"ok":true}`)},
		{"retryable error", failure("flaky", true)},
		{"non-retryable error", failure(sortie.ErrorTypeCancelled, false)},
		{"interrupt", interrupt(sortie.StateInputRequired)},
	} {
		now := T0 + int64(i)*100
		run, lid := f.working(now)
		got, err := f.cp.RequestCancel(f.ctx, run.ID, "user asked")
		must(t, "RequestCancel(claimed run)", err)
		if got.State != sortie.StateWorking || !got.CancelRequested || got.Reason != "user asked" {
			t.Errorf("RequestCancel(claimed run) = state %s cancel %v reason %q, want working, true, %q",
				got.State, got.CancelRequested, got.Reason, "user asked")
		}
		beat, err := f.cp.Heartbeat(f.ctx, claimOf(run.ID, 1, lid, now+10))
		if err != nil || !beat.CancelRequested {
			t.Errorf("Heartbeat after RequestCancel = %v err %v, want CancelRequested true", stateOf(beat), err)
		}
		f.append(run.ID, 1, lid, now+11, event("stopping"))
		again, err := f.cp.RequestCancel(f.ctx, run.ID, "second request")
		if err != nil || !again.CancelRequested || again.Reason != "user asked" || again.State != sortie.StateWorking {
			t.Errorf("RequestCancel again = %v reason %q err %v, want working, still cancel requested, reason %q",
				stateOf(again), reasonOf(again), err, "user asked")
		}
		end := f.finish(run.ID, 1, lid, tc.outcome, now+20)
		if end.State != sortie.StateCancelled || !end.CancelRequested || end.LeaseExpiresMs != 0 {
			t.Errorf("Finish(%s) after RequestCancel = state %s cancel %v lease %d, want cancelled, true, 0",
				tc.name, end.State, end.CancelRequested, end.LeaseExpiresMs)
		}
	}
	expired, err := f.cp.Expired(f.ctx, T0+1_000_000_000, 0)
	must(t, "Expired", err)
	if len(expired) != 0 {
		t.Errorf("Expired(far future) = %v, want no cancelled run", ids(expired))
	}
}

func reasonOf(r *sortie.Run) string {
	if r == nil {
		return ""
	}
	return r.Reason
}

func testCancelUnclaimed(t *testing.T, f *fixture) {
	submitted := f.submitted(T0)
	launched := f.submitted(T0 + 1)
	_, lid := f.launch(launched.ID, 1, T0+2)
	retrying, lid2 := f.working(T0 + 3)
	retrying = f.finish(retrying.ID, 1, lid2, failure("flaky", true), T0+6)
	for name, id := range map[string]sortie.RunID{
		"submitted": submitted.ID, "launched, unclaimed": launched.ID, "waiting for a retry": retrying.ID,
	} {
		got, err := f.cp.RequestCancel(f.ctx, id, "")
		must(t, fmt.Sprintf("RequestCancel(%s run)", name), err)
		if got.State != sortie.StateCancelled || !got.CancelRequested || got.LeaseExpiresMs != 0 || got.Reason == "" {
			t.Errorf("RequestCancel(%s run) = state %s cancel %v lease %d reason %q, want cancelled at once, true, 0, a reason",
				name, got.State, got.CancelRequested, got.LeaseExpiresMs, got.Reason)
		}
		if cur := got.Current(); cur != nil && !cur.Ended() {
			t.Errorf("RequestCancel(%s run): attempt %d still live, want it ended", name, cur.Number)
		}
		f.unchanged(fmt.Sprintf("RequestCancel(%s run)", name), id, got)
	}
	_, err := f.cp.Claim(f.ctx, claimOf(launched.ID, 1, lid, T0+10))
	wantErr(t, "Claim(attempt 1 of a run cancelled before its claim)", err, sortie.ErrTerminal)
	if cur := f.get(launched.ID).Current(); cur.Outcome != sortie.StateCancelled {
		t.Errorf("launched run's attempt 1 outcome = %q, want cancelled", cur.Outcome)
	}
}

func testInterruptResume(t *testing.T, f *fixture) {
	for i, state := range []sortie.State{sortie.StateInputRequired, sortie.StateAuthRequired} {
		now := T0 + int64(i)*100
		run := NewRun(now)
		run.Policy.MaxAttempts = 1 // a resume is a new attempt, not a retry
		run = f.reserve(run, now)
		_, lid := f.launch(run.ID, 1, now+1)
		f.claim(run.ID, 1, lid, now+2)
		o := interrupt(state)
		got := f.finish(run.ID, 1, lid, o, now+3)
		if got.State != state || got.LeaseExpiresMs != 0 || got.Current().Outcome != state {
			t.Errorf("Finish(interrupt %s) = state %s lease %d outcome %s, want %s, 0, %s",
				state, got.State, got.LeaseExpiresMs, got.Current().Outcome, state, state)
		}
		if diff := cmp.Diff(o.Interrupt, got.Interrupt); diff != "" {
			t.Errorf("Finish(interrupt): run interrupt (-want +got):\n%s", diff)
		}
		_, err := f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: 2, LaunchID: sortie.NewLaunchID(), NowMs: now + 4})
		wantErr(t, fmt.Sprintf("RecordLaunch(attempt 2 of a %s run before Resume)", state), err, sortie.ErrConflict)
		_, err = f.cp.Resume(f.ctx, run.ID, json.RawMessage(`{"answer":`))
		wantErr(t, "Resume(malformed JSON)", err, sortie.ErrInvalidArgument)
		f.unchanged("refused calls on an interrupted run", run.ID, got)

		input := json.RawMessage(`{"answer":"README.md"}`)
		resumed, err := f.cp.Resume(f.ctx, run.ID, input)
		must(t, fmt.Sprintf("Resume(%s run)", state), err)
		if resumed.State != sortie.StateWorking || string(resumed.ResumeInput) != string(input) || resumed.LeaseExpiresMs == 0 {
			t.Errorf("Resume = state %s input %s lease %d, want working, %s, due now", resumed.State, resumed.ResumeInput, resumed.LeaseExpiresMs, input)
		}
		_, err = f.cp.Resume(f.ctx, run.ID, input)
		wantErr(t, "Resume(working run)", err, sortie.ErrConflict)
		next, _ := f.next(resumed, now+5)
		if next.Attempt != 2 || next.State != sortie.StateWorking {
			t.Errorf("after Resume, next attempt = %d state %s, want attempt 2 working", next.Attempt, next.State)
		}
	}
	fresh := f.submitted(T0 + 1000)
	_, err := f.cp.Resume(f.ctx, fresh.ID, nil)
	wantErr(t, "Resume(submitted run)", err, sortie.ErrConflict)
	var idle *sortie.NotInterruptedError
	if !errors.As(err, &idle) || idle.ID != fresh.ID || idle.State != sortie.StateSubmitted {
		t.Errorf("Resume(submitted run) = %v, want a *sortie.NotInterruptedError naming the run and its state", err)
	}
}
