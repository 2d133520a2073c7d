package sortie_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

func validRef() *sortie.PayloadRef {
	return &sortie.PayloadRef{Store: "file", Key: "runs/01JD0000000000000000000000/result-1", Size: 5, SHA256: strings.Repeat("ab", 32)}
}

// A result by reference is a valid terminal message and outcome; one
// carrying both the output and a reference, or a malformed reference, is
// refused naming the field.
func TestResultByReference(t *testing.T) {
	o := sortie.Outcome{ResultRef: validRef()}
	if err := o.Validate(); err != nil {
		t.Fatalf("Outcome{ResultRef}.Validate() = %v, want nil", err)
	}
	if back := sortie.OutcomeOf(sortie.MessageOf(o)); back.ResultRef == nil || *back.ResultRef != *o.ResultRef || back.Result != nil {
		t.Errorf("OutcomeOf(MessageOf(%+v)) = %+v, want the same reference", o, back)
	}
	for name, tc := range map[string]struct {
		o     sortie.Outcome
		field string
	}{
		"both":       {sortie.Outcome{Result: json.RawMessage("1"), ResultRef: validRef()}, "result"},
		"bad key":    {sortie.Outcome{ResultRef: &sortie.PayloadRef{Store: "file", Key: "../etc/passwd", SHA256: strings.Repeat("ab", 32)}}, "result.output_ref.key"},
		"bad hash":   {sortie.Outcome{ResultRef: &sortie.PayloadRef{Store: "file", Key: validRef().Key, SHA256: "x"}}, "result.output_ref.sha256"},
		"bad size":   {sortie.Outcome{ResultRef: &sortie.PayloadRef{Store: "file", Key: validRef().Key, Size: -1, SHA256: strings.Repeat("ab", 32)}}, "result.output_ref.size"},
		"no store":   {sortie.Outcome{ResultRef: &sortie.PayloadRef{Key: validRef().Key, SHA256: strings.Repeat("ab", 32)}}, "result.output_ref.store"},
		"with error": {sortie.Outcome{ResultRef: validRef(), Error: &sortie.ErrorMessage{Type: "x", Message: "y"}}, "message"},
	} {
		var ve *sortie.ValidationError
		if err := tc.o.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Validate(%s) = %v, want a ValidationError for %s", name, err, tc.field)
		}
	}
}

// An engine without a payload store refuses variables over
// sortie.MaxVariablesBytes at submit, naming the limit, and stores
// nothing; a worker without one fails a result over sortie.MaxResultBytes
// with a permanent "output" error naming the limit.
func TestNoPayloadStoreRefusesAtSubmit(t *testing.T) {
	r := newRig(t, nil)
	big, _ := json.Marshal(map[string]string{"output": strings.Repeat("x", sortie.MaxVariablesBytes)})
	_, err := r.client.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: big})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "variables" || !strings.Contains(err.Error(), "262144") || !strings.Contains(err.Error(), "no payload store") {
		t.Fatalf("Submit(%d bytes of variables) = %v, want a ValidationError naming the 262144-byte limit", len(big), err)
	}
	if page, err := r.client.List(t.Context(), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Fatalf("List after the refusal = %v, %v; want no run", page, err)
	}
	// 50,000 bytes of variables; the result escapes each '<' as \u003c.
	run := r.wait(t, r.submit(t, `{"output":"`+strings.Repeat("<", 50_000)+`"}`, "").ID)
	if run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != "output" || !strings.Contains(run.Error.Message, "no payload store") {
		t.Fatalf("a run returning 300,002 bytes on a worker without a store: %s, %+v; want failed with an output error naming the limit", run.State, run.Error)
	}
}

// Without a payload store, a resume input over sortie.MaxVariablesBytes is
// refused at resume naming the field and the limit, and the run stays
// interrupted without it; a worker without one fails an interrupt whose
// checkpoint is over sortie.MaxResultBytes with a permanent "output"
// error naming the limit.
func TestNoPayloadStoreRefusesLargeResume(t *testing.T) {
	r := newRig(t, nil)
	paused := r.wait(t, r.submit(t, `{"events":0,"interrupt":"input-required"}`, "").ID)
	big, _ := json.Marshal(map[string]string{"answer": strings.Repeat("x", sortie.MaxVariablesBytes)})
	_, err := r.client.Resume(t.Context(), paused.ID, big)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "input" || !strings.Contains(err.Error(), "262144") || !strings.Contains(err.Error(), "no payload store") {
		t.Fatalf("Resume(%d bytes) = %v; want a ValidationError on input naming the 262144-byte limit", len(big), err)
	}
	if run, err := r.client.Get(t.Context(), paused.ID); err != nil || run.State != sortie.StateInputRequired || run.ResumeInput != nil || run.ResumeInputRef != nil {
		t.Fatalf("after the refusal: %+v, %v; want the run input-required without resume input", run, err)
	}
	// 50,000 bytes of variables; the checkpoint escapes each '<' as \u003c.
	run := r.wait(t, r.submit(t, `{"events":0,"interrupt":"input-required","output":"`+strings.Repeat("<", 50_000)+`"}`, "").ID)
	if run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != "output" || !strings.Contains(run.Error.Message, "262144") || !strings.Contains(run.Error.Message, "no payload store") {
		t.Fatalf("a run interrupting with a 300,002-byte checkpoint on a worker without a store: %s, %+v; want failed with an output error naming the limit", run.State, run.Error)
	}
}
