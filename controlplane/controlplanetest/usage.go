package controlplanetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
)

// testUsageOfEngineAndWorker: the engine's usage recorded with a launch
// (Reserve's attempt 1, RecordLaunch's later attempts) and the worker's
// usage at Finish add up on the attempt, so a run's cost counts both.
// Capacity units are the driver's own and not compared.
func testUsageOfEngineAndWorker(t *testing.T, f *fixture) {
	run := NewRun(T0)
	lid := sortie.NewLaunchID()
	got, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: T0, LaunchID: lid, Usage: &sortie.Usage{KMSRequests: 2}})
	must(t, "Reserve(with launch and usage)", err)
	if a := got.Current(); a == nil || a.Usage == nil || a.Usage.KMSRequests != 2 {
		t.Fatalf("Reserve(with usage) attempt 1 = %+v, want the engine's 2 KMS requests recorded", a)
	}
	f.claim(run.ID, 1, lid, T0+1)
	worker := &sortie.Usage{DurationMs: 7, BilledDurationMs: 8, MemoryMB: 128, Arch: "arm64", Requests: 1, KMSRequests: 1}
	got = f.finish(run.ID, 1, lid, sortie.Outcome{Error: &sortie.ErrorMessage{Type: "x", Message: "retry", Retryable: true}, Usage: worker}, T0+2)
	want := &sortie.Usage{DurationMs: 7, BilledDurationMs: 8, MemoryMB: 128, Arch: "arm64", Requests: 1, KMSRequests: 3}
	ignoreUnits := cmpopts.IgnoreFields(sortie.Usage{}, "ReadUnits", "WriteUnits")
	if d := cmp.Diff(want, got.Attempts[0].Usage, ignoreUnits); d != "" {
		t.Errorf("Finish(attempt 1) usage (-want +got):\n%s", d)
	}
	lid2 := sortie.NewLaunchID()
	_, err = f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: 2, LaunchID: lid2, NowMs: T0 + 5_000_000,
		Usage: &sortie.Usage{KMSRequests: 1}})
	must(t, "RecordLaunch(attempt 2 with usage)", err)
	f.claim(run.ID, 2, lid2, T0+5_000_001)
	got = f.finish(run.ID, 2, lid2, result(`1`), T0+5_000_002) // a finish without usage keeps the engine's
	if d := cmp.Diff(&sortie.Usage{KMSRequests: 1}, got.Attempts[1].Usage, ignoreUnits); d != "" {
		t.Errorf("Finish(attempt 2, no usage) usage (-want +got):\n%s", d)
	}
	stored := f.get(run.ID)
	for i := range stored.Attempts {
		if stored.Cost != nil {
			t.Errorf("Get(%s).Cost = %+v, want nil: a control plane stores usage, never money", run.ID, stored.Cost)
		}
		if d := cmp.Diff(got.Attempts[i].Usage, stored.Attempts[i].Usage); d != "" {
			t.Errorf("Get(%s) attempt %d usage differs from Finish's (-finish +get):\n%s", run.ID, i+1, d)
		}
	}
}
