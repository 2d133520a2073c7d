package lambda_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// A 1 MB interrupt checkpoint and a 1 MB resume input round-trip through
// the worker function under the emulator: the function writes the
// checkpoint through the attempt's PUT URL, the host keeps the resume
// input, and the resumed attempt reads both through its GET URLs and sees
// the exact bytes. No invocation payload, stored run, object or function
// log holds the canary. A 100 KB resume input, under
// sortie.MaxVariablesBytes but over the launcher's 64 KiB limit, is kept by
// reference too.
func TestResumeByReferenceOnLambda(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{MaxPayloadBytes: 64 << 10})}}
	e, _, srv, _ := payloadHost(t, cp, limitedRecorder{rec})
	canary := "canary-" + fmt.Sprint(time.Now().UnixNano())
	checkpoint, _ := json.Marshal(strings.Repeat(canary+" ", 1<<20/(len(canary)+1)))
	input, _ := json.Marshal(map[string]string{"answer": strings.Repeat(canary+"!", 1<<20/(len(canary)+1))})
	run := submit(t, e, map[string]any{"events": 0, "interrupt": "input-required", "output": json.RawMessage(checkpoint)}, sortie.Policy{}, nil)
	paused := waitRun(t, cp, run.ID, "the run to pause", settled)
	if ref := paused.Interrupt.CheckpointRef; paused.State != sortie.StateInputRequired || ref == nil || ref.Size != int64(len(checkpoint)) {
		t.Fatalf("run = %s reason %q, interrupt %+v; want input-required with the checkpoint by reference", paused.State, paused.Reason, paused.Interrupt)
	}
	resumed, err := e.Resume(t.Context(), run.ID, input)
	if err != nil || resumed.ResumeInputRef == nil {
		t.Fatalf("Resume(1 MB) = %v; want the input kept by reference", err)
	}
	done := waitRun(t, cp, run.ID, "the resumed run to settle", func(r *sortie.Run) bool { return r.State.Terminal() })
	got, err := e.Get(t.Context(), run.ID)
	if done.State != sortie.StateCompleted || err != nil {
		t.Fatalf("resumed run = %s reason %q, Get = %v; want completed", done.State, done.Reason, err)
	}
	var out struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
		Checkpoint  json.RawMessage `json:"checkpoint"`
	}
	if json.Unmarshal(got.Result, &out) != nil || !bytes.Equal(out.ResumedWith, input) || !bytes.Equal(out.Checkpoint, checkpoint) {
		t.Fatalf("the resumed handler saw %d bytes of input and %d of checkpoint; want exactly the %d and %d", len(out.ResumedWith), len(out.Checkpoint), len(input), len(checkpoint))
	}
	overLauncherLimit(t, e, cp)
	places := map[string][]byte{"function logs": []byte(r.Output())}
	for i, b := range rec.sent {
		places[fmt.Sprintf("invocation %d", i+1)] = b
	}
	stored, _ := cp.Get(t.Context(), run.ID)
	places["stored run"], _ = json.Marshal(stored)
	objects := 0
	for k, v := range srv.Objects(t) {
		places["object "+k] = v
		if strings.HasPrefix(k, "runs/"+string(run.ID)+"/") {
			objects++
		}
	}
	if len(rec.sent) != 4 || objects != 4 {
		t.Errorf("%d invocations, %d objects of the run; want 4 invocations (2 a run) and 4 objects (variables, checkpoint-1, the resume input, result-2)", len(rec.sent), objects)
	}
	for where, b := range places {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary in plaintext", where)
		}
	}
}

// overLauncherLimit resumes a run with 100 KB of input, over the
// launcher's 64 KiB invocation limit: the engine keeps it by reference
// and the resumed attempt sees it exactly.
func overLauncherLimit(t *testing.T, e *sortie.Engine, cp sortie.ControlPlane) {
	t.Helper()
	run := submit(t, e, map[string]any{"events": 0, "interrupt": "input-required"}, sortie.Policy{}, nil)
	waitRun(t, cp, run.ID, "the small run to pause", settled)
	input, _ := json.Marshal(map[string]string{"answer": strings.Repeat("a", 100<<10)})
	resumed, err := e.Resume(t.Context(), run.ID, input)
	if err != nil || resumed.ResumeInputRef == nil || len(resumed.ResumeInput) != 0 {
		t.Fatalf("Resume(100 KB, launcher limit 64 KiB) = %v; want the input kept by reference", err)
	}
	done := waitRun(t, cp, run.ID, "the small run to end", func(r *sortie.Run) bool { return r.State.Terminal() })
	var out struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
	}
	if done.State != sortie.StateCompleted || json.Unmarshal(done.Result, &out) != nil || !bytes.Equal(out.ResumedWith, input) {
		t.Fatalf("resumed run = %s %q; want completed, the handler having seen the 100 KB input exactly", done.State, done.Reason)
	}
}

// limitedRecorder is a recorder that tells the engine its launcher's
// invocation limit.
type limitedRecorder struct{ *recorder }

func (l limitedRecorder) MaxInvocationBytes() (int, string) {
	return l.inner.(sortie.InvocationLimiter).MaxInvocationBytes()
}
