package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/functions"
)

var _ functions.StepSealer = (*envelope.Config)(nil)

// A secret step's result the worker seals inline is one Seal takes, and
// its envelope fits a step's inline limit.
func TestStepInlineLimits(t *testing.T) {
	if sortie.MaxSecretStepInlineBytes > envelope.MaxPlaintextBytes || envelope.MaxSealedBytes > sortie.MaxStepResultBytes {
		t.Errorf("sortie.MaxSecretStepInlineBytes %d, envelope.MaxPlaintextBytes %d, envelope.MaxSealedBytes %d, sortie.MaxStepResultBytes %d: want the first at most the second and the third at most the fourth",
			sortie.MaxSecretStepInlineBytes, envelope.MaxPlaintextBytes, envelope.MaxSealedBytes, sortie.MaxStepResultBytes)
	}
}

// A secret step's result opens for any later attempt of the run under the
// same step name, and for nothing else: another name, another run or
// another agent fails with ErrBinding or as a forgery.
func TestStepSealing(t *testing.T) {
	c := envelope.NewConfig(envelope.New(ring(t, "k1", localKEK(t, 3)), nil))
	run := testRun(1)
	inv := invocationOf(run, 1, nil)
	sealed, err := c.SealStep(bg, inv, "charge", []byte(`{"card":"4242"}`))
	if err != nil {
		t.Fatalf("SealStep = %v", err)
	}
	if strings.Contains(string(sealed), "4242") {
		t.Fatalf("the sealed step shows its result: %s", sealed)
	}
	later := invocationOf(run, 3, nil)
	if got, err := c.OpenStep(bg, later, "charge", sealed); err != nil || string(got) != `{"card":"4242"}` {
		t.Fatalf("OpenStep(attempt 3) = %q, %v; want the result", got, err)
	}
	other := invocationOf(testRun(2), 2, nil)
	renamed := *later
	renamed.Agent.Name = "other"
	for name, tc := range map[string]struct {
		inv  *sortie.Invocation
		step string
	}{"another name": {later, "refund"}, "another run": {other, "charge"}, "another agent": {&renamed, "charge"}} {
		_, err := c.OpenStep(bg, tc.inv, tc.step, sealed)
		t.Logf("OpenStep(%s) = %v", name, err)
		if err == nil || (!errors.Is(err, envelope.ErrBinding) && !strings.Contains(err.Error(), "authentic")) {
			t.Errorf("OpenStep(%s) = %v, want a refusal", name, err)
		}
	}
}
