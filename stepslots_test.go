package sortie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/payload"
)

// limitedLauncher is a launcher whose invocations may be at most n bytes.
type limitedLauncher struct {
	sortie.Launcher
	n int
}

func (l limitedLauncher) MaxInvocationBytes() (int, string) { return l.n, "the test launcher's limit" }

// slotsCanary pads the steps of TestStepSlotsOverStepsRef.
const slotsCanary = "canary-slot-7c21 "

// A run on URL workers (a Granter on a gofakes3 bucket) whose launcher
// takes 16 KiB: attempt 1 keeps a 200 KB step and a 100 KB secret one in
// its step slots and fails retryably; attempt 2 gets the steps as a
// StepsRef (inline they would leave no room for the sealed URLs), yet is
// granted GET URLs of both objects, replays them byte for byte without
// running them, and completes. Engine.Steps reads the plain one back from
// its slot, no object holds the canary, and Delete removes the objects.
func TestStepSlotsOverStepsRef(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDSLOTTEST", "AWS_SECRET_ACCESS_KEY": "slot-test-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	srv := s3test.Start(t, "payloads")
	kr := envelopetest.Config(t, "k1")
	store, b, err := payload.OpenURL(t.Context(), srv.SigningBlobURL(), kr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r := newRig(t, nil)
	r.worker.PayloadURLs, r.worker.StepSealer = kr, kr
	var mu sync.Mutex
	var refs []bool // per attempt: the invocation carried a StepsRef
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		mu.Lock()
		refs = append(refs, inv.StepsRef != nil && len(inv.Steps) == 0 && len(inv.SealedPayloadURLs) > 0)
		mu.Unlock()
		return r.execute(ctx, inv)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e := sortie.NewEngine(r.cp, limitedLauncher{l, 16 << 10}, probeAgent, &sortie.EngineOptions{Payloads: store, Sealer: payload.NewGranter(store, kr)})
	t.Cleanup(func() { e.Close() })
	run, err := e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Policy: sortie.Policy{MaxAttempts: 3}, Variables: json.RawMessage(`{"events":0,"steps":2,"secret_steps":1,
		"step_pad":"` + slotsCanary + `","step_pad_bytes":200000,"secret_step_pad_bytes":100000,"fail":"flaky","retryable":true,"fail_attempts":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	done := reconcileUntil(t, r.cp, e, run.ID, "a terminal state", func(r *sortie.Run) bool { return r.State.Terminal() })
	if done.State != sortie.StateCompleted || done.Attempt != 2 || len(refs) != 2 || !refs[1] {
		t.Fatalf("run = %s on attempt %d (reason %q), StepsRef per attempt %v; want completed on attempt 2, which got a StepsRef", done.State, done.Attempt, done.Reason, refs)
	}
	got, err := e.Get(t.Context(), run.ID) // the result (300 KB) is kept by reference too
	if err != nil {
		t.Fatal(err)
	}
	checkSlotSteps(t, e, r, got)
	for k, v := range srv.Objects(t) {
		if bytes.Contains(v, []byte(slotsCanary)) {
			t.Errorf("object %s holds the canary in the clear", k)
		}
	}
	if err := e.Delete(t.Context(), run.ID); err != nil || len(srv.Objects(t)) != 0 {
		t.Errorf("Delete = %v, leaving %d objects; want none", err, len(srv.Objects(t)))
	}
}

// checkSlotSteps checks that done's result holds both steps of attempt 1
// byte for byte, that only attempt 1 ran them, and that Engine.Steps
// reads the plain one back from a slot of attempt 1.
func checkSlotSteps(t *testing.T, e *sortie.Engine, r *rig, done *sortie.Run) {
	t.Helper()
	pad := func(n int) string { return strings.Repeat(slotsCanary, n/len(slotsCanary)+1)[:n] }
	var out struct{ Steps []probe.StepResult }
	if err := json.Unmarshal(done.Result, &out); err != nil || len(out.Steps) != 2 ||
		out.Steps[0] != (probe.StepResult{Step: 1, Attempt: 1, Pad: pad(100000)}) || out.Steps[1] != (probe.StepResult{Step: 2, Attempt: 1, Pad: pad(200000)}) {
		t.Errorf("result: %d steps (%v); want attempt 1's two, byte for byte", len(out.Steps), err)
	}
	evs, _ := r.cp.Events(t.Context(), done.ID, sortie.Cursor{}, 100)
	ran := 0
	for _, ev := range evs {
		if ev.Kind == probe.EventStepRan {
			ran++
		}
	}
	steps, err := e.Steps(t.Context(), done.ID)
	if err != nil || len(steps) != 2 || ran != 2 {
		t.Fatalf("Steps = %d, %v; %d step runs; want 2 steps, each run once", len(steps), err, ran)
	}
	for _, st := range steps {
		if st.ResultRef == nil || !strings.Contains(st.ResultRef.Key, "/step-slot-1-") {
			t.Errorf("step %q kept as %+v, want by reference in a slot of attempt 1", st.Name, st.ResultRef)
		}
	}
	var plain probe.StepResult
	if err := json.Unmarshal(steps[1].Result, &plain); err != nil || plain.Pad != pad(200000) || len(steps[0].Result) != 0 {
		t.Errorf("Engine.Steps: the plain step reads as %d bytes (%v), the secret one as %d; want the 200 KB pad and nothing", len(steps[1].Result), err, len(steps[0].Result))
	}
	if u := done.Attempts[0].Usage; u == nil || u.PayloadWrites != 2 {
		t.Errorf("attempt 1's usage %+v, want 2 payload writes (the steps)", u)
	}
	if u := done.Attempts[1].Usage; u == nil || u.PayloadReads != 2 || u.PayloadWrites != 1 {
		t.Errorf("attempt 2's usage %+v, want 2 payload reads (the steps) and 1 write (the result)", u)
	}
}
