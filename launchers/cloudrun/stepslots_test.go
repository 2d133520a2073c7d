package cloudrun_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/s3test"
)

// stepsOverCallbacks: a container reporting over callbacks keeps a
// 200 KB step and a 100 KB secret one by reference in its attempt's step
// slots (through its PUT URLs, the callbacks carrying result_ref), then
// fails retryably; the next container replays both through its GET URLs
// without running them, and no object holds a pad in the clear.
func stepsOverCallbacks(t *testing.T, h *host.Host, bucket *s3test.Server) {
	t.Helper()
	const pad = "cloudrun-step-pad-5e1a "
	vars, _ := json.Marshal(map[string]any{"events": 0, "steps": 2, "secret_steps": 1, "step_pad": pad, "step_pad_bytes": 200_000,
		"secret_step_pad_bytes": 100_000, "fail": "flaky", "retryable": true, "fail_attempts": 1})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars, Policy: sortie.Policy{MaxAttempts: 3}})
	if err != nil {
		t.Fatalf("Submit(two large steps) = %v", err)
	}
	done := waitRun(t, h.Engine(), run.ID, "run "+string(run.ID)+" to end", true, func(r *sortie.Run) bool { return r.State.Terminal() })
	padOf := func(n int) string { return strings.Repeat(pad, n/len(pad)+1)[:n] }
	var out struct{ Steps []probe.StepResult }
	if done.State != sortie.StateCompleted || done.Attempt != 2 || json.Unmarshal(done.Result, &out) != nil || len(out.Steps) != 2 ||
		out.Steps[0] != (probe.StepResult{Step: 1, Attempt: 1, Pad: padOf(100_000)}) || out.Steps[1] != (probe.StepResult{Step: 2, Attempt: 1, Pad: padOf(200_000)}) {
		t.Fatalf("run = %s on attempt %d (%q), %d steps in its result; want completed on attempt 2 with attempt 1's two steps byte for byte", done.State, done.Attempt, done.Reason, len(out.Steps))
	}
	steps, err := h.Engine().Steps(t.Context(), run.ID)
	if err != nil || len(steps) != 2 {
		t.Fatalf("Steps = %d, %v; want 2", len(steps), err)
	}
	for _, st := range steps {
		if st.ResultRef == nil || !strings.Contains(st.ResultRef.Key, "/step-slot-1-") {
			t.Errorf("step %q kept as %+v, want by reference in a slot of attempt 1", st.Name, st.ResultRef)
		}
	}
	if u := done.Attempts[1].Usage; u == nil || u.PayloadReads != 2 {
		t.Errorf("attempt 2's usage %+v, want the 2 step reads", u)
	}
	for k, v := range bucket.Objects(t) {
		if bytes.Contains(v, []byte(pad+pad)) {
			t.Errorf("object %s holds a step's pad in the clear", k)
		}
	}
}
