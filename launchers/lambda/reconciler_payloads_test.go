package lambda_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload"
)

// A run that keeps its 5 MB variables and result by reference loses its
// first attempt (the worker crashes after reading the variables through
// the URLs its host granted); the reconciler function, given the payload
// bucket (SORTIE_PAYLOAD_BUCKET), ends it from Lambda's on-failure record
// and relaunches the run on the worker function with URLs it signs
// itself (payload/s3presign, with the function's credentials) and seals
// with the keyring: attempt 2 reads the variables and writes the 5 MB
// result through them, and the host reads it back. The host launched
// only attempt 1; no object or reconciler log holds the canary or a URL
// signature.
func TestReconcilerGrantsPayloadURLs(t *testing.T) {
	table, cp := newTable(t)
	worker := startRIE(t, 60, fnEnv(table))
	queue := &accepted{invs: make(chan *sortie.Invocation, 2)}
	e, _, srv, _ := payloadHost(t, cp, queue)
	reconciler := startRIE(t, 60, fnEnv(table, fnlambda.EnvMode+"="+fnlambda.ModeReconciler, fnlambda.EnvWorkerFunction+"=function",
		fnlambda.EnvLambdaEndpoint+"="+worker.Endpoint, fnlambda.EnvPayloadBucket+"="+srv.SigningBlobURL()))
	const canary = "canary-reconciler-7d21c9"
	doc := strings.Repeat(canary+" ", 5<<20/(len(canary)+1))
	run := submit(t, e, map[string]any{"events": 1, "crash_attempts": 1, "output": doc}, sortie.Policy{MaxAttempts: 3}, nil)
	if run.VariablesRef == nil {
		t.Fatalf("Submit(5 MB variable) kept it inline, want it by reference")
	}
	inv := <-queue.invs

	const requestID = "6b1f2c7e-0000-4000-8000-000000000021"
	status, body := deliver(t, worker, requestID, inv)
	if status < 300 || !strings.Contains(string(body), "Runtime.ExitError") {
		t.Fatalf("deliver(crashing attempt) = %d %s, want a Runtime.ExitError failure (after reading the variables)", status, body)
	}
	if resp := invokeSync(t, reconciler, failureRecord(requestID, inv, body)); resp.Status != fnlambda.StatusRecorded {
		t.Fatalf("reconciler(on-failure record) = %+v, want status %q", resp, fnlambda.StatusRecorded)
	}
	done := waitRun(t, cp, run.ID, "the reconciler to relaunch and attempt 2 to complete", func(r *sortie.Run) bool {
		if !settled(r) {
			invokeSync(t, reconciler, scheduledEvent)
		}
		return settled(r)
	})
	if done.State != sortie.StateCompleted || done.Attempt != 2 || done.ResultRef == nil {
		t.Fatalf("run = %s on attempt %d, result ref %v, reason %q; want completed on attempt 2 with its result by reference (attempt 1: %+v)",
			done.State, done.Attempt, done.ResultRef, done.Reason, done.Attempts[0].Error)
	}
	if n := len(queue.invs); n != 0 {
		t.Fatalf("the host launched %d more attempts, want none: the reconciler relaunched the run", n)
	}
	got, err := e.Get(t.Context(), run.ID)
	var out string
	if err != nil || json.Unmarshal(got.Result, &out) != nil || out != doc {
		t.Fatalf("Get(%s) = %d-byte result, %v; want the %d-byte document back", run.ID, len(got.Result), err, len(doc))
	}
	objects := srv.Objects(t)
	if objects[payload.Key(run.ID, sortie.ResultPayloadName(2))] == nil || len(objects) != 2 {
		t.Errorf("the bucket holds %d objects, want 2: the variables and result-2", len(objects))
	}
	places := map[string][]byte{"reconciler logs": []byte(reconciler.Output())}
	for k, v := range objects {
		places["object "+k] = v
	}
	for where, b := range places {
		if bytes.Contains(b, []byte(canary)) || bytes.Contains(b, []byte("X-Amz-Signature")) {
			t.Errorf("%s holds the canary or a URL signature", where)
		}
	}
}
