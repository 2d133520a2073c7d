package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/payload"
)

// Two 500 KB durable steps, the first secret, through `sortie run` on
// warm workers (the Go session worker keeps them in the state directory's
// payload store): attempt 1 fails after them, attempt 2 replays both
// without running them and returns their exact bytes; `sortie get` shows
// the plain one inline with its reference and the secret one by
// reference only; no file of the state directory holds the pad in the
// clear (its text twice in a row); and one flipped byte in the plain step's object is refused on
// read, naming the SHA-256.
func TestLargeStepsCLI(t *testing.T) {
	c := newCLI(t)
	const n = 500 << 10
	r := c.run("run", "probe", "--json", "--policy", fast, "--var", "events=0", "--var", "steps=2",
		"--var", "step_pad="+payloadCanary, "--var", "step_pad_bytes=512000", "--var", "secret_steps=1",
		"--var", "fail=flaky", "--var", "retryable=true", "--var", "fail_attempts=1")
	events, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.Attempt != 2 {
		t.Fatalf("sortie run probe with two 500 KB steps: exit %d, final %+v; want completed on attempt 2\n%.2000s", r.code, final, r.stderr)
	}
	pad := strings.Repeat(payloadCanary, n/len(payloadCanary)+1)[:n]
	var out struct{ Steps []probe.StepResult }
	if err := json.Unmarshal(final.Result, &out); err != nil {
		t.Fatalf("result of %d bytes: %v", len(final.Result), err)
	}
	if diff := cmp.Diff([]probe.StepResult{{Step: 1, Attempt: 1, Pad: pad}, {Step: 2, Attempt: 1, Pad: pad}}, out.Steps); diff != "" {
		t.Errorf("step results of attempt 2 (-want +got): both attempt 1's, byte for byte\n%.2000s", diff)
	}
	want := []string{
		"1 step.started step-1", "1 probe.step step-1", "1 step.completed step-1",
		"1 step.started step-2", "1 probe.step step-2", "1 step.completed step-2",
		"2 step.replayed step-1", "2 step.replayed step-2",
	}
	if diff := cmp.Diff(want, stepLog(t, events, probe.EventStepRan)); diff != "" {
		t.Errorf("step events (-want +got): each step's function ran once\n%s", diff)
	}
	got := c.get(final.ID)
	if len(got.Steps) != 2 {
		t.Fatalf("sortie get --json: %d steps, want 2", len(got.Steps))
	}
	secret, plain := got.Steps[0], got.Steps[1]
	if !secret.Secret || secret.ResultRef == nil || len(secret.Result)+len(secret.Sealed) != 0 {
		t.Errorf("the secret step shows result %d bytes, sealed %d, ref %+v; want its reference only", len(secret.Result), len(secret.Sealed), secret.ResultRef)
	}
	var res probe.StepResult
	if err := json.Unmarshal(plain.Result, &res); err != nil || res.Pad != pad || plain.ResultRef == nil {
		t.Errorf("the plain step shows %d bytes (%v), ref %+v; want its result inline and its reference", len(plain.Result), err, plain.ResultRef)
	}
	if len(got.Attempts) != 2 {
		t.Fatalf("sortie get --json: %d attempts, want 2", len(got.Attempts))
	}
	if u := got.Attempts[0].Usage; u == nil || u.PayloadWrites != 2 || u.OffloadedBytes < 2*n || u.PayloadStore != "file" {
		t.Errorf("attempt 1's usage %+v, want the warm process's 2 step writes (file) and their %d bytes offloaded", u, 2*n)
	}
	if u := got.Attempts[1].Usage; u == nil || u.PayloadReads != 2 {
		t.Errorf("attempt 2's usage %+v, want the warm process's 2 step reads", u)
	}
	if text := c.run("get", string(final.ID)); !strings.Contains(text.stdout, "by reference") {
		t.Errorf("sortie get does not say the steps are kept by reference:\n%.2000s", text.stdout)
	}
	noPlaintextOf(t, c.state, strings.Repeat(payloadCanary, 2)) // the variables hold it once

	flipByte(t, c.state, payload.Key(final.ID, sortie.StepPayloadName("step-2", 1)))
	g := c.run("get", string(final.ID), "--json")
	if g.code == 0 || !strings.Contains(g.stderr, "SHA-256") || !strings.Contains(g.stderr, "step-2") {
		t.Fatalf("sortie get after one flipped byte in a step's object: exit %d, stderr %.500q; want a refusal naming the SHA-256 and the step", g.code, g.stderr)
	}
}
