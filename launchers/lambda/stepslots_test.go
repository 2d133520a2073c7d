package lambda_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/payload/sealed"
)

// untilSettled reads the run until it is terminal or interrupted,
// reconciling with e meanwhile (a retry waits for the reconciler).
func untilSettled(t *testing.T, cp sortie.ControlPlane, e *sortie.Engine, id sortie.RunID) *sortie.Run {
	t.Helper()
	return waitRun(t, cp, id, "the run to settle", func(r *sortie.Run) bool {
		if !settled(r) {
			if _, err := e.Reconcile(t.Context()); err != nil {
				t.Fatalf("Reconcile = %v", err)
			}
		}
		return settled(r)
	})
}

// A 200 KB step and a 100 KB secret step on the worker function under the
// emulator: attempt 1 keeps both by reference in its step slots through
// the PUT URLs its host granted, then fails retryably; attempt 2 is
// granted GET URLs of both objects and replays them byte for byte without
// running them. The stored steps hold only references to slots of
// attempt 1, the usage counts the step PUTs and GETs, and no invocation,
// stored run, step, event, object or function log holds a pad in the
// clear.
func TestLargeStepsOnLambda(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{})}}
	e, _, srv, kr := payloadHost(t, cp, rec)
	canary := "canary-slot-" + fmt.Sprint(time.Now().UnixNano()) + " "
	run := submit(t, e, map[string]any{"events": 0, "steps": 2, "secret_steps": 1, "step_pad": canary, "step_pad_bytes": 200_000,
		"secret_step_pad_bytes": 100_000, "fail": "flaky", "retryable": true, "fail_attempts": 1}, sortie.Policy{MaxAttempts: 3}, nil)
	done := untilSettled(t, cp, e, run.ID)
	if done.State != sortie.StateCompleted || done.Attempt != 2 || len(rec.sent) != 2 {
		t.Fatalf("run = %s on attempt %d (reason %q), %d invocations; want completed on attempt 2", done.State, done.Attempt, done.Reason, len(rec.sent))
	}
	got, err := e.Get(t.Context(), run.ID)
	pad := func(n int) string { return strings.Repeat(canary, n/len(canary)+1)[:n] }
	var out struct{ Steps []probe.StepResult }
	if err != nil || json.Unmarshal(got.Result, &out) != nil || len(out.Steps) != 2 ||
		out.Steps[0] != (probe.StepResult{Step: 1, Attempt: 1, Pad: pad(100_000)}) || out.Steps[1] != (probe.StepResult{Step: 2, Attempt: 1, Pad: pad(200_000)}) {
		t.Fatalf("Get = %v, %d steps in the result; want attempt 1's two steps byte for byte", err, len(out.Steps))
	}
	evs, _ := cp.Events(t.Context(), run.ID, sortie.Cursor{}, 100)
	ran := 0
	for _, ev := range evs {
		ran += btoi(ev.Kind == probe.EventStepRan)
	}
	if ran != 2 {
		t.Errorf("the steps ran %d times, want 2: once each, in attempt 1", ran)
	}
	if u := done.Attempts[0].Usage; u == nil || u.PayloadWrites != 2 || u.PayloadStore != "s3" {
		t.Errorf("attempt 1's usage %+v, want 2 writes (the steps) on s3", u)
	}
	if u := done.Attempts[1].Usage; u == nil || u.PayloadReads != 2 || u.PayloadWrites != 1 {
		t.Errorf("attempt 2's usage %+v, want 2 reads (the steps) and 1 write (the result)", u)
	}
	steps, _ := cp.Steps(t.Context(), run.ID)
	urls := grantedURLs(t, kr, rec.sent[1])
	for _, st := range steps {
		if st.ResultRef == nil || !strings.Contains(st.ResultRef.Key, "/step-slot-1-") || urls.Get[st.ResultRef.Key] == "" {
			t.Errorf("step %q kept as %+v; want a reference to a slot of attempt 1, which attempt 2 may read", st.Name, st.ResultRef)
		}
	}
	if n := urls.StepSlots(run.ID, 2); n != sortie.MaxStepSlots {
		t.Errorf("attempt 2 was granted %d step slots, want %d", n, sortie.MaxStepSlots)
	}
	places := map[string][]byte{"function logs": []byte(r.Output()), "invocation 1": rec.sent[0], "invocation 2": rec.sent[1]}
	places["stored steps"], _ = json.Marshal(steps)
	places["events"], _ = json.Marshal(evs)
	stored, _ := cp.Get(t.Context(), run.ID)
	places["stored run"], _ = json.Marshal(stored)
	for k, v := range srv.Objects(t) {
		places["object "+k] = v
	}
	for where, b := range places { // the variables hold the canary once, a pad many times
		if bytes.Contains(b, []byte(canary+canary)) {
			t.Errorf("%s holds a step's pad in the clear", where)
		}
	}
}

// Ten 70 KB steps on the worker function: attempt 1 keeps
// sortie.MaxStepSlots of them by reference, then its next step fails the
// attempt with a retryable error naming the limit; attempt 2 replays
// those (from their GET URLs) and keeps the other two in its own slots,
// and the run completes with every step run once but the two attempt 1
// could not keep.
func TestStepSlotsUsedUpOnLambda(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{})}}
	e, _, _, _ := payloadHost(t, cp, rec)
	const n = sortie.MaxStepSlots + 2
	run := submit(t, e, map[string]any{"events": 0, "steps": n, "step_pad": "slot ", "step_pad_bytes": 70_000}, sortie.Policy{MaxAttempts: 3}, nil)
	done := untilSettled(t, cp, e, run.ID)
	if done.State != sortie.StateCompleted || done.Attempt != 2 {
		t.Fatalf("run = %s on attempt %d (reason %q); want completed on attempt 2", done.State, done.Attempt, done.Reason)
	}
	if a := done.Attempts[0].Error; a == nil || !a.Retryable || !strings.Contains(a.Message, "sortie.MaxStepSlots") {
		t.Errorf("attempt 1's error = %+v, want a retryable one naming sortie.MaxStepSlots", a)
	}
	steps, _ := cp.Steps(t.Context(), run.ID)
	byAttempt := map[int]int{}
	for _, st := range steps {
		if st.ResultRef == nil || !strings.Contains(st.ResultRef.Key, fmt.Sprintf("/step-slot-%d-", st.Attempt)) {
			t.Errorf("step %q of attempt %d kept as %+v, want a slot of its attempt", st.Name, st.Attempt, st.ResultRef)
		}
		byAttempt[st.Attempt]++
	}
	evs, _ := cp.Events(t.Context(), run.ID, sortie.Cursor{}, 1000)
	ran := 0
	for _, ev := range evs {
		ran += btoi(ev.Kind == probe.EventStepRan)
	}
	if byAttempt[1] != sortie.MaxStepSlots || byAttempt[2] != 2 || ran != n+1 {
		t.Errorf("steps recorded by attempt: %v, %d step runs; want %d by attempt 1, 2 by attempt 2, %d runs (the one that found no slot ran twice)",
			byAttempt, ran, sortie.MaxStepSlots, n+1)
	}
}

// grantedURLs opens the payload URLs of an invocation payload as the
// worker does.
func grantedURLs(t *testing.T, kr *envelope.Config, b []byte) *sealed.URLs {
	t.Helper()
	var inv sortie.Invocation
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatal(err)
	}
	urls, _, err := sealed.OpenURLs(t.Context(), kr, &inv)
	if err != nil {
		t.Fatalf("OpenURLs = %v", err)
	}
	return urls
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
