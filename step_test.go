package sortie

import (
	"encoding/json"
	"errors"
	"fmt"
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
