package lambda_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload"
)

// storeRun records in cp a probe run that ended at endMs after two
// attempts, keeping in store what they would have: its 5 MB variables,
// attempt 1's result (written, then the attempt failed) and checkpoint,
// a 300 KB step result of attempt 1, and attempt 2's 5 MB result. It
// returns the run's ID and the keys of its objects.
func storeRun(t *testing.T, cp sortie.ControlPlane, store *payload.Store, endMs int64) (sortie.RunID, []string) {
	t.Helper()
	t0 := endMs - int64(10*time.Minute/time.Millisecond)
	run := controlplanetest.NewRun(t0)
	run.Policy.MaxAttempts, run.Policy.BackoffMs = 2, 1000
	var keys []string
	put := func(name string, n int) *sortie.PayloadRef {
		ref, err := store.Put(t.Context(), run.ID, run.Agent.Name, name, "value", []byte(`"`+strings.Repeat("p", n)+`"`))
		if err != nil {
			t.Fatalf("Put(%s) = %v", name, err)
		}
		keys = append(keys, ref.Key)
		return ref
	}
	run.Variables, run.VariablesRef = nil, put("variables", 5<<20)
	put(sortie.ResultPayloadName(1), 1<<10)
	put(sortie.CheckpointPayloadName(1), 1<<10)
	step := sortie.Step{Name: "fetch", Attempt: 1, Status: sortie.StepCompleted, ResultRef: put(sortie.StepPayloadName("fetch", 1), 300<<10),
		StartedMs: t0 + 2, DurationMs: 1, Tries: 1}
	recordAttempts(t, cp, run, step, put(sortie.ResultPayloadName(2), 5<<20), t0, endMs)
	slices.Sort(keys)
	return run.ID, keys
}

// recordAttempts records run from t0: attempt 1 records step and fails,
// retryable; attempt 2 completes at endMs with result.
func recordAttempts(t *testing.T, cp sortie.ControlPlane, run *sortie.Run, step sortie.Step, result *sortie.PayloadRef, t0, endMs int64) {
	t.Helper()
	ctx := t.Context()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("store a run of two attempts: %s: %v", what, err)
		}
	}
	lid1, lid2 := sortie.NewLaunchID(), sortie.NewLaunchID()
	_, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: t0, LaunchID: lid1})
	must("Reserve", err)
	_, err = cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid1, NowMs: t0 + 1})
	must("Claim(1)", err)
	_, err = cp.RecordStep(ctx, sortie.StepRecord{RunID: run.ID, Attempt: 1, LaunchID: lid1, Step: step, NowMs: t0 + 3})
	must("RecordStep", err)
	_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid1, NowMs: t0 + 4,
		Outcome: sortie.Outcome{Error: &sortie.ErrorMessage{Type: "test", Message: "retry", Retryable: true}}})
	must("Finish(1)", err)
	_, err = cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 2, LaunchID: lid2, NowMs: endMs - 3})
	must("RecordLaunch(2)", err)
	_, err = cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 2, LaunchID: lid2, NowMs: endMs - 2})
	must("Claim(2)", err)
	_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 2, LaunchID: lid2, NowMs: endMs, Outcome: sortie.Outcome{ResultRef: result}})
	must("Finish(2)", err)
}

// The reconciler function with a retention (SORTIE_RETENTION) and the
// payload bucket deletes, on its schedule, the run that ended before the
// retention with every object of it: the 5 MB variables and result it
// references, its step's result, and the result and checkpoint its first
// attempt wrote without the run recording them (through DELETE URLs it
// signs: no S3 client, no listing). The run that ended since keeps its
// run and objects. No reconciler log holds a URL signature.
func TestReconcilerRetentionDeletesObjects(t *testing.T) {
	table, cp := newTable(t)
	_, store, srv, _ := payloadHost(t, cp, &accepted{invs: make(chan *sortie.Invocation, 1)})
	reconciler := startRIE(t, 60, fnEnv(table, fnlambda.EnvMode+"="+fnlambda.ModeReconciler, fnlambda.EnvWorkerFunction+"=function",
		fnlambda.EnvLambdaEndpoint+"=http://127.0.0.1:1", fnlambda.EnvPayloadBucket+"="+srv.SigningBlobURL(), fnlambda.EnvRetention+"=1h"))
	now := time.Now()
	old, _ := storeRun(t, cp, store, now.Add(-2*time.Hour).UnixMilli())
	recent, keep := storeRun(t, cp, store, now.Add(-30*time.Minute).UnixMilli())
	if n := len(srv.Objects(t)); n != 10 {
		t.Fatalf("the bucket holds %d objects before the pass, want 10 (5 per run)", n)
	}

	if resp := invokeSync(t, reconciler, scheduledEvent); resp.Status != fnlambda.StatusReconciled || resp.Expired != 1 {
		t.Fatalf("reconciler(scheduled event) = %+v, want reconciled with 1 run expired", resp)
	}
	if _, err := cp.Get(t.Context(), old); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(run ended 2 h ago) = %v, want ErrNotFound", err)
	}
	if _, err := cp.Get(t.Context(), recent); err != nil {
		t.Errorf("Get(run ended 30 min ago) = %v, want it kept", err)
	}
	objects := srv.Objects(t)
	if got := slices.Sorted(maps.Keys(objects)); !slices.Equal(got, keep) {
		t.Errorf("the bucket holds\n  %q\nwant only the kept run's\n  %q", got, keep)
	}
	if out := reconciler.Output(); strings.Contains(out, "X-Amz-Signature") || strings.Contains(out, "not deleted") {
		t.Errorf("reconciler logs hold a URL signature or a failed delete:\n%s", out)
	}
}
