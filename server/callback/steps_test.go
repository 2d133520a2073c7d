package callback_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
)

// A run whose worker reports through callbacks records its steps there,
// and its retry replays them: each step's function ran once.
func TestStepsThroughCallbacks(t *testing.T) {
	h := newHost(t, callbackWorker)
	run, err := h.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":0,"steps":2,"fail":"flaky","retryable":true,"fail_attempts":1}`),
		Policy:    sortie.Policy{MaxAttempts: 2, BackoffMs: 1}})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go h.engine.RunReconciler(ctx, 10*time.Millisecond) // it launches the retry
	if run, err = h.client.Wait(ctx, run.ID); err != nil || run.State != sortie.StateCompleted || run.Attempt != 2 {
		t.Fatalf("Wait = %+v, %v; want completed on attempt 2", run, err)
	}
	ran := 0
	for _, e := range h.stored(t, run.ID).Events {
		if e.Kind == probe.EventStepRan {
			ran++
		}
	}
	steps, err := h.cp.Steps(ctx, run.ID)
	if ran != 2 || err != nil || len(steps) != 2 || steps[0].Attempt != 1 || steps[1].Attempt != 1 {
		t.Errorf("steps ran %d times, recorded %+v (%v); want 2 runs, both recorded by attempt 1", ran, steps, err)
	}
}

// The steps route answers the claimed, live attempt only.
func TestStepsRouteAnswersTheLiveAttempt(t *testing.T) {
	h := newHost(t, nil)
	ctx := context.Background()
	inv := h.launch(t)
	rep := mustReporter(t, inv)
	if err := rep.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	st := sortie.Step{Name: "fetch", Attempt: 1, Status: sortie.StepCompleted, Result: json.RawMessage(`{"n":1}`), Tries: 1}
	if err := rep.Step(ctx, st); err != nil {
		t.Fatalf("Step = %v", err)
	}
	other := st
	other.Result = json.RawMessage(`{"n":2}`)
	if err := rep.Step(ctx, other); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Step(fetch) with other content = %v, want ErrConflict", err)
	}
	got, err := rep.Steps(ctx)
	if err != nil || len(got) != 1 || string(got[0].Result) != `{"n":1}` {
		t.Fatalf("Steps = %+v, %v; want the step", got, err)
	}
	if err := rep.Finish(ctx, sortie.Outcome{Result: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.Steps(ctx); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Steps after the attempt ended = %v, want ErrConflict", err)
	}
}
