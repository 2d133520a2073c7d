package lambda_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
)

// completedAt stores a probe run that completed at endMs.
func (f *fixture) completedAt(t *testing.T, endMs int64) sortie.RunID {
	t.Helper()
	ctx := t.Context()
	run := controlplanetest.NewRun(endMs - 10)
	run.Policy.MaxAttempts = 1
	if _, _, err := f.cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: endMs - 10}); err != nil {
		t.Fatal(err)
	}
	lid := sortie.NewLaunchID()
	_, err := f.cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: endMs - 9})
	if err == nil {
		_, err = f.cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: endMs - 8})
	}
	if err == nil {
		_, err = f.cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
			Outcome: sortie.Outcome{Result: json.RawMessage(`"done"`)}, NowMs: endMs})
	}
	if err != nil {
		t.Fatalf("store a run completed at %d: %v", endMs, err)
	}
	return run.ID
}

// With a retention (SORTIE_RETENTION), a scheduled reconcile deletes the
// run that ended before it and keeps the one that ended since.
func TestScheduledReconcileExpiresRuns(t *testing.T) {
	f := newFixture(t, fnlambda.ModeReconciler)
	f.h.NewEngine = func() *sortie.Engine { return sortie.NewEngine(f.cp, f.q, sortie.Agents{}, nil) }
	f.h.Retention = time.Hour
	now := time.Now()
	old := f.completedAt(t, now.Add(-2*time.Hour).UnixMilli())
	recent := f.completedAt(t, now.Add(-30*time.Minute).UnixMilli())
	resp, err := f.h.Invoke(lambdaCtx(t, "req-schedule", time.Minute), json.RawMessage(`{"detail-type":"Scheduled Event"}`))
	if err != nil || resp.Status != fnlambda.StatusReconciled || resp.Expired != 1 {
		t.Fatalf("Invoke(scheduled event) = %+v, %v; want reconciled with 1 run expired", resp, err)
	}
	if _, err := f.cp.Get(t.Context(), old); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(run ended 2 h ago) = %v, want ErrNotFound", err)
	}
	if _, err := f.cp.Get(t.Context(), recent); err != nil {
		t.Errorf("Get(run ended 30 min ago) = %v, want it kept", err)
	}
	if fnlambda.EnvRetention != sortie.EnvRetention {
		t.Errorf("fnlambda.EnvRetention = %q, want the hosts' %q", fnlambda.EnvRetention, sortie.EnvRetention)
	}
	env, err := fnlambda.LoadEnv(func(k string) string {
		return map[string]string{fnlambda.EnvMode: fnlambda.ModeReconciler, fnlambda.EnvTable: "t", fnlambda.EnvRetention: "30s"}[k]
	})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != fnlambda.EnvRetention {
		t.Errorf("LoadEnv(%s=30s) = %+v, %v; want a ValidationError naming it", fnlambda.EnvRetention, env, err)
	}
}
