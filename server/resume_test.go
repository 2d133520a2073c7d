package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// Resuming a run that is still live (not interrupted) is a 409 that names
// the run's state, over HTTP and through the client, and leaves the run
// running.
func TestResumeOfALiveRunNamesItsState(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0, "sleep_ms": 60000}`)
	defer r.engine.Cancel(context.Background(), run.ID, "test over")
	var eb wire.ErrorBody
	code := post(t, r, "/v1/runs/"+run.ID.String()+"/resume", `{"input": {"answer": 1}}`, nil, &eb)
	named := false
	for _, s := range []sortie.State{sortie.StateSubmitted, sortie.StateWorking} {
		named = named || strings.Contains(eb.Error.Message, " is "+string(s)+":")
	}
	if code != http.StatusConflict || eb.Error.Code != wire.CodeConflict || !named || !strings.Contains(eb.Error.Message, "input-required or auth-required") {
		t.Errorf("resume a live run = %d %+v, want 409 conflict naming its state and the states that resume", code, eb)
	}
	_, err := r.client.Resume(context.Background(), run.ID, []byte(`{"answer": 1}`))
	if !errors.Is(err, sortie.ErrConflict) || !strings.Contains(err.Error(), "only an input-required or auth-required run resumes") {
		t.Errorf("Client.Resume(a live run) = %v, want ErrConflict naming the states that resume", err)
	}
	if got, err := r.client.Get(context.Background(), run.ID); err != nil || got.State.Terminal() || got.ResumeInput != nil {
		t.Errorf("the run after the refused resumes = %+v, %v; want it live, no input", got, err)
	}
}

// Resuming a terminal run is a 409 terminal that names the run and its
// state, over HTTP and through the client (which maps it to ErrTerminal).
func TestResumeOfATerminalRunNamesItsState(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0}`)
	if got := r.final(t, run.ID); got.State != sortie.StateCompleted {
		t.Fatalf("run ended %s, want completed", got.State)
	}
	want := "run " + run.ID.String() + " is completed: a terminal run does not change (resume)"
	var eb wire.ErrorBody
	code := post(t, r, "/v1/runs/"+run.ID.String()+"/resume", `{"input": {"answer": 1}}`, nil, &eb)
	if code != http.StatusConflict || eb.Error.Code != wire.CodeTerminal || eb.Error.Message != want {
		t.Errorf("resume a completed run = %d %+v, want 409 terminal saying %q", code, eb, want)
	}
	_, err := r.client.Resume(context.Background(), run.ID, []byte(`{"answer": 1}`))
	if !errors.Is(err, sortie.ErrTerminal) || !strings.Contains(err.Error(), want) {
		t.Errorf("Client.Resume(a completed run) = %v, want ErrTerminal saying %q", err, want)
	}
}

// POST /v1/runs/{id}/resume with {} answers with JSON null, as `sortie
// resume RUN` without --input does: an auth-required run resumes so.
func TestResumeWithoutInputIsNull(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"interrupt": "auth-required"}`)
	if got := r.final(t, run.ID); got.State != sortie.StateAuthRequired {
		t.Fatalf("probe run = %s, want auth-required", got.State)
	}
	var got sortie.Run
	if code := post(t, r, "/v1/runs/"+run.ID.String()+"/resume", `{}`, nil, &got); code != http.StatusOK {
		t.Fatalf("resume with {} = %d %+v, want 200", code, got)
	}
	stored, err := r.cp.Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(stored.ResumeInput) != "null" {
		t.Fatalf("the run resumed with {} holds input %q, want JSON null", stored.ResumeInput)
	}
	if got := r.final(t, run.ID); got.State != sortie.StateCompleted || !strings.Contains(string(got.Result), `"resumed_with":null`) {
		t.Errorf("the run resumed with {} = %s, result %s; want completed, resumed with null", got.State, got.Result)
	}
}
