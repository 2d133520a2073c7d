package controlplanetest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// lambdaBudgeted reserves a run with a budget of budget n$ and a
// heartbeat of 1 s, launched on Lambda (the engine's 2 KMS requests
// recorded with the launch), with the default price table.
func (f *fixture) lambdaBudgeted(nowMs, budget int64) (*sortie.Run, string) {
	f.t.Helper()
	p, ok := f.cp.(pricer)
	if !ok {
		f.t.Fatalf("%T has no SetPricer; every driver enforces budgets", f.cp)
	}
	p.SetPricer(pricing.Default())
	run := NewRun(nowMs)
	run.Policy.MaxCostNanoUSD = budget
	run.Policy.HeartbeatMs, run.Policy.LeaseMs = 1000, 3000
	lid := sortie.NewLaunchID()
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: nowMs, LaunchID: lid, Usage: &sortie.Usage{KMSRequests: 2}})
	must(f.t, "Reserve(budgeted run)", err)
	_, err = f.cp.SetRef(f.ctx, run.ID, 1, lid, sortie.Ref{Provider: "lambda", ID: "req-1", RunID: run.ID, Attempt: 1, LaunchID: lid})
	must(f.t, "SetRef(lambda)", err)
	return run, lid
}

// ignoreUnits leaves out the capacity units a driver records on its own.
var ignoreUnits = cmpopts.IgnoreFields(sortie.Usage{}, "ReadUnits", "WriteUnits")

// testClaimShapeStopsAtHeartbeat: the compute shape a worker states at its
// claim is stored on the attempt (with the engine's launch usage), so a
// heartbeat prices the live Lambda attempt's compute and requests the
// cancel with budget_exceeded once its projection reaches the budget; the
// finish's shape wins where it sets a field.
//
// Hand-checked at the default table: 128 MB arm64 is 0.125 GB ×
// 13,333.4 n$ = 1,666.675 n$ a second, plus one request (200 n$) and the
// engine's 2 KMS requests (2 × 3,000 n$). With a budget of 1,006,200 n$,
// a heartbeat at 598 s projects 599 s: 998,338 + 6,200 = 1,004,538, under;
// at 599 s it projects 600 s: 1,000,005 + 6,200 = 1,006,205, over.
func testClaimShapeStopsAtHeartbeat(t *testing.T, f *fixture) {
	run, lid := f.lambdaBudgeted(T0, 1_006_200)
	c := claimOf(run.ID, 1, lid, T0+10)
	c.Usage = &sortie.Usage{MemoryMB: 128, Arch: "arm64"}
	claimed, err := f.cp.Claim(f.ctx, c)
	must(t, "Claim(with a shape)", err)
	want := &sortie.Usage{MemoryMB: 128, Arch: "arm64", KMSRequests: 2}
	if d := cmp.Diff(want, claimed.Current().Usage, ignoreUnits); d != "" {
		t.Errorf("Claim(with a shape) attempt usage (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, f.get(run.ID).Current().Usage, ignoreUnits); d != "" {
		t.Errorf("Get after Claim(with a shape) attempt usage (-want +got):\n%s", d)
	}
	hb := func(at int64) *sortie.Run {
		got, err := f.cp.Heartbeat(f.ctx, claimOf(run.ID, 1, lid, at))
		must(t, "Heartbeat", err)
		return got
	}
	if got := hb(T0 + 10 + 598_000); got.CancelRequested {
		t.Fatalf("Heartbeat at 598 s (1,004,538 n$ projected, budget 1,006,200) = cancel requested (%s), want none", got.Reason)
	}
	at := int64(T0 + 10 + 599_000)
	got := hb(at)
	if !got.CancelRequested || got.Error == nil || got.Error.Type != sortie.ErrorTypeBudgetExceeded || got.LeaseExpiresMs != at {
		t.Fatalf("Heartbeat at 599 s (1,006,205 n$ projected, budget 1,006,200) = cancel %v error %+v lease T0+%d; want a budget stop due at once",
			got.CancelRequested, got.Error, got.LeaseExpiresMs-T0)
	}
	final := f.finish(run.ID, 1, lid, sortie.Outcome{Error: &sortie.ErrorMessage{Type: sortie.ErrorTypeCancelled, Message: "stopped"},
		Usage: &sortie.Usage{BilledDurationMs: 599_100, MemoryMB: 256, Requests: 1}}, at+100)
	if final.State != sortie.StateFailed || final.Error == nil || final.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Errorf("Finish after the budget stop = %s error %+v, want failed with budget_exceeded", final.State, final.Error)
	}
	want = &sortie.Usage{BilledDurationMs: 599_100, MemoryMB: 256, Arch: "arm64", Requests: 1, KMSRequests: 2}
	if d := cmp.Diff(want, f.get(run.ID).Current().Usage, ignoreUnits); d != "" {
		t.Errorf("Finish(memory 256 MB) usage, want the finish's memory and the claim's arch (-want +got):\n%s", d)
	}
}

// testClaimShapeRefused: a claim whose shape is invalid or carries more
// than the shape is refused with a validation error naming the field, and
// nothing is stored: the attempt stays unclaimed and the run's version
// unchanged, so a valid claim then succeeds.
func testClaimShapeRefused(t *testing.T, f *fixture) {
	run, lid := f.lambdaBudgeted(T0, 1_000_000)
	before := f.get(run.ID)
	for field, u := range map[string]*sortie.Usage{
		"usage.arch":         {MemoryMB: 128, Arch: "sparc"},
		"usage.billing":      {VCPU: 1, Billing: "spot"},
		"usage.memory_mb":    {MemoryMB: -1},
		"usage.requests":     {MemoryMB: 128, Requests: 1},
		"usage.kms_requests": {KMSRequests: 5},
	} {
		c := claimOf(run.ID, 1, lid, T0+10)
		c.Usage = u
		_, err := f.cp.Claim(f.ctx, c)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Claim(usage %+v) = %v, want a validation error naming %s", *u, err, field)
		}
	}
	after := f.get(run.ID)
	if after.Version != before.Version || after.Current().Claimed() || after.State != before.State {
		t.Errorf("after refused claims: version %d (was %d), claimed %v, state %s; want the run unchanged",
			after.Version, before.Version, after.Current().Claimed(), after.State)
	}
	f.claim(run.ID, 1, lid, T0+20)
}
