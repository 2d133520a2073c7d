package controlplanetest

import (
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// pricer is what a control plane whose budget enforcement the suite
// checks implements (every driver does, through controlplane.Changes).
type pricer interface {
	SetPricer(sortie.Pricer)
}

// perSecond prices local compute at $1 a second (10⁶ n$ a ms), so a
// run's cost is its attempts' duration, plus whatever capacity the
// driver records.
func perSecond(t *testing.T, f *fixture) {
	t.Helper()
	p, ok := f.cp.(pricer)
	if !ok {
		t.Fatalf("%T has no SetPricer; every driver enforces budgets", f.cp)
	}
	table, err := pricing.Default().Set("local.second", "1")
	must(t, "Set(local.second)", err)
	p.SetPricer(table)
}

// budgeted reserves a run with a budget of maxMs of local compute and a
// heartbeat of 1 s, launches it on the local launcher and claims it at
// nowMs.
func (f *fixture) budgeted(nowMs, maxMs int64) (*sortie.Run, string) {
	f.t.Helper()
	run := NewRun(nowMs)
	run.Policy.MaxCostNanoUSD = maxMs * 1_000_000
	run.Policy.HeartbeatMs, run.Policy.LeaseMs = 1000, 3000
	lid := sortie.NewLaunchID()
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: nowMs, LaunchID: lid})
	must(f.t, "Reserve(budgeted run)", err)
	_, err = f.cp.SetRef(f.ctx, run.ID, 1, lid, sortie.Ref{Provider: "local", ID: "1", RunID: run.ID, Attempt: 1, LaunchID: lid})
	must(f.t, "SetRef(local)", err)
	return f.claim(run.ID, 1, lid, nowMs), lid
}

// testBudgetStopsAtHeartbeat: the heartbeat whose projected cost (the
// attempt priced to the end of the next heartbeat) passes the budget
// requests the run's cancel with a budget_exceeded error and makes its
// lease due; the worker's finish then fails the run, never cancels it.
func testBudgetStopsAtHeartbeat(t *testing.T, f *fixture) {
	perSecond(t, f)
	run, lid := f.budgeted(T0, 3000)
	hb := func(at int64) *sortie.Run {
		got, err := f.cp.Heartbeat(f.ctx, claimOf(run.ID, 1, lid, at))
		must(t, "Heartbeat", err)
		return got
	}
	if got := hb(T0 + 1000); got.CancelRequested { // 2 s projected, of 3
		t.Fatalf("Heartbeat at 1 s (2 s projected, budget 3 s) = cancel requested, want none")
	}
	got := hb(T0 + 2500) // 3.5 s projected
	if !got.CancelRequested || got.Error == nil || got.Error.Type != sortie.ErrorTypeBudgetExceeded || got.LeaseExpiresMs != T0+2500 {
		t.Fatalf("Heartbeat at 2.5 s (3.5 s projected, budget 3 s) = cancel %v error %+v lease T0+%d; want a budget stop due at once",
			got.CancelRequested, got.Error, got.LeaseExpiresMs-T0)
	}
	if again := hb(T0 + 2600); again.LeaseExpiresMs != T0+2500 {
		t.Errorf("a heartbeat after the stop moved the lease to T0+%d, want it kept at T0+2500", again.LeaseExpiresMs-T0)
	}
	final := f.finish(run.ID, 1, lid, sortie.Outcome{Error: &sortie.ErrorMessage{Type: sortie.ErrorTypeCancelled, Message: "stopped"},
		Usage: &sortie.Usage{DurationMs: 2700}}, T0+2700)
	if final.State != sortie.StateFailed || final.Error == nil || final.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Errorf("Finish after the budget stop = %s error %+v, want failed with budget_exceeded", final.State, final.Error)
	}
}

// testBudgetEndsRetries: a retryable failure after the budget is spent
// fails the run instead of scheduling another attempt, and so does a
// resume.
func testBudgetEndsRetries(t *testing.T, f *fixture) {
	perSecond(t, f)
	run, lid := f.budgeted(T0, 1000)
	got := f.finish(run.ID, 1, lid, sortie.Outcome{Error: &sortie.ErrorMessage{Type: "flaky", Message: "again", Retryable: true},
		Usage: &sortie.Usage{DurationMs: 1000}}, T0+1000)
	if got.State != sortie.StateFailed || got.Error == nil || got.Error.Type != sortie.ErrorTypeBudgetExceeded || got.LeaseExpiresMs != 0 {
		t.Errorf("Finish(retryable, budget spent) = %s error %+v lease %d, want failed with budget_exceeded and nothing due", got.State, got.Error, got.LeaseExpiresMs)
	}
	cheap, clid := f.budgeted(T0+10, 1000)
	got = f.finish(cheap.ID, 1, clid, sortie.Outcome{Error: &sortie.ErrorMessage{Type: "flaky", Message: "again", Retryable: true},
		Usage: &sortie.Usage{DurationMs: 10}}, T0+20)
	if got.State != sortie.StateWorking || got.LeaseExpiresMs == 0 {
		t.Errorf("Finish(retryable, within budget) = %s lease %d, want a retry due", got.State, got.LeaseExpiresMs)
	}
	paused, plid := f.budgeted(T0+30, 1000)
	in := interrupt(sortie.StateInputRequired)
	in.Usage = &sortie.Usage{DurationMs: 1500}
	f.finish(paused.ID, 1, plid, in, T0+40)
	got, err := f.cp.Resume(f.ctx, paused.ID, []byte(`{"answer":1}`))
	must(t, "Resume(budget spent)", err)
	if got.State != sortie.StateFailed || got.Error == nil || got.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Errorf("Resume(budget spent) = %s error %+v, want failed with budget_exceeded", got.State, got.Error)
	}
}
