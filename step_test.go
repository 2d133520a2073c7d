package sortie

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func completed(name string, result string) Step {
	return Step{Name: name, Attempt: 1, Status: StepCompleted, Result: json.RawMessage(result), Tries: 1}
}

func TestCheckSteps(t *testing.T) {
	many := make([]Step, MaxSteps+1)
	for i := range many {
		many[i] = completed(fmt.Sprintf("s%d", i), `1`)
	}
	sealed := Step{Name: "secret", Attempt: 1, Status: StepCompleted, Secret: true, Sealed: json.RawMessage(`{"v":1}`)}
	unmarked := Step{Name: "unmarked", Attempt: 1, Status: StepCompleted, Sealed: json.RawMessage(`{"v":1}`)}
	both := sealed
	both.Result = json.RawMessage(`1`)
	byRef := Step{Name: "big", Attempt: 1, Status: StepCompleted, ResultRef: testStepRef("1")}
	secretRef := byRef
	secretRef.Secret = true
	refAndResult := byRef
	refAndResult.Result = json.RawMessage(`1`)
	badRef := byRef
	badRef.ResultRef = &PayloadRef{Store: "file", Key: "elsewhere", SHA256: byRef.ResultRef.SHA256}
	for _, tc := range []struct {
		name  string
		steps []Step
		field string // "" = accepted
	}{
		{"none", nil, ""},
		{"two", []Step{completed("a", `1`), completed("b", `{"x":2}`)}, ""},
		{"sealed", []Step{sealed}, ""},
		{"sealed and result", []Step{both}, "step.result"},
		{"sealed but not secret", []Step{unmarked}, "step.secret"},
		{"by reference", []Step{byRef}, ""},
		{"secret by reference", []Step{secretRef}, ""},
		{"reference and result", []Step{refAndResult}, "step.result"},
		{"bad reference", []Step{badRef}, "step.result_ref.key"},
		{"repeated name", []Step{completed("a", `1`), completed("a", `1`)}, "steps"},
		{"too many", many, "steps"},
		{"no attempt", []Step{{Name: "a", Status: StepCompleted, Result: json.RawMessage(`1`)}}, "step.attempt"},
	} {
		err := CheckSteps("steps", tc.steps)
		var ve *ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("CheckSteps(%s) = %v, want nil", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("CheckSteps(%s) = %v, want a ValidationError on %q", tc.name, err, tc.field)
		}
	}
}

func TestStepSame(t *testing.T) {
	a := completed("a", `{"x": 1}`)
	b := completed("a", `{"x":1}`)
	b.RecordedMs = 99
	if !a.Same(&b) {
		t.Errorf("Same(%+v, %+v) = false, want true: spacing and RecordedMs do not count", a, b)
	}
	b.Tries = 2
	if a.Same(&b) {
		t.Errorf("Same with other tries = true, want false")
	}
}

// testStepRef is a reference to step "big"'s object of attempt 1 of a
// run, SHA-256 64 times digit.
func testStepRef(digit string) *PayloadRef {
	return &PayloadRef{Store: "file", Key: "runs/01JD0000000000000000000000/" + StepPayloadName("big", 1),
		Size: 500 << 10, SHA256: strings.Repeat(digit, 64)}
}

// A step kept by reference counts its reference's JSON against
// MaxStepsBytes, and is the same step again when its reference names the
// same content (size and SHA-256), wherever the object is.
func TestStepByReference(t *testing.T) {
	a := Step{Name: "big", Attempt: 1, Status: StepCompleted, ResultRef: testStepRef("1")}
	ref, _ := json.Marshal(a.ResultRef)
	if a.Size() != len(ref) || a.Size() > 512 {
		t.Errorf("Size() = %d, want the reference's %d bytes of JSON", a.Size(), len(ref))
	}
	b := a.Clone()
	b.ResultRef.Store, b.ResultRef.Key = "s3://other", "runs/01JD0000000000000000000001/step-x-1"
	if !a.Same(&b) || a.ResultRef.Store != "file" {
		t.Errorf("Same(a, a moved elsewhere) = false (or Clone shared the ref), want true")
	}
	b.ResultRef.SHA256 = strings.Repeat("2", 64)
	if a.Same(&b) {
		t.Errorf("Same(a, other content) = true, want false")
	}
	if c := completed("big", `1`); a.Same(&c) || c.Same(&a) {
		t.Errorf("Same(by reference, inline) = true, want false")
	}
	if StepPayloadName("big", 1) == StepPayloadName("big", 2) || StepPayloadName("big", 1) == StepPayloadName("bag", 1) {
		t.Errorf("StepPayloadName gives two attempts or two names one object: %q", StepPayloadName("big", 1))
	}
	if name := StepPayloadName(strings.Repeat("é", 64), 1000); !payloadKeyPattern.MatchString("runs/01JD0000000000000000000000/" + name) {
		t.Errorf("StepPayloadName(128-byte name, 1000) = %q, not a payload name", name)
	}
}

func TestInvocationSteps(t *testing.T) {
	inv := validInvocation()
	inv.Steps = []Step{completed("a", `1`)}
	if err := inv.Validate(); err != nil {
		t.Fatalf("Validate(invocation with a step) = %v", err)
	}
	inv.StepsRef = &StepsRef{Count: 1, Bytes: 1}
	var ve *ValidationError
	if err := inv.Validate(); !errors.As(err, &ve) || ve.Field != "steps_ref" {
		t.Errorf("Validate(steps and steps_ref) = %v, want a ValidationError on steps_ref", err)
	}
	inv.Steps = nil
	if err := inv.Validate(); err != nil {
		t.Errorf("Validate(steps_ref) = %v", err)
	}
}
