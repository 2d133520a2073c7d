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
// log holds the canary.
func TestResumeByReferenceOnLambda(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{})}}
	e, _, srv, _ := payloadHost(t, cp, rec)
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
	places := map[string][]byte{"function logs": []byte(r.Output())}
	for i, b := range rec.sent {
		places[fmt.Sprintf("invocation %d", i+1)] = b
	}
	stored, _ := cp.Get(t.Context(), run.ID)
	places["stored run"], _ = json.Marshal(stored)
	objects := srv.Objects(t)
	for k, v := range objects {
		places["object "+k] = v
	}
	if len(rec.sent) != 2 || len(objects) != 4 {
		t.Errorf("%d invocations, %d objects; want 2 invocations and 4 objects (variables, checkpoint-1, the resume input, result-2)", len(rec.sent), len(objects))
	}
	for where, b := range places {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary in plaintext", where)
		}
	}
}
