package sortie

import (
	"context"
	"encoding/json"
	"fmt"
)

// withSteps hands inv the run's recorded steps: in the invocation when it
// stays under the launcher's limit ([InvocationLimiter], else
// [MaxInvocationBytes]), else as a [StepsRef] the worker resolves where it
// reports. A first attempt has none to read.
func (e *Engine) withSteps(ctx context.Context, inv *Invocation) error {
	if inv.Attempt == 1 {
		return nil
	}
	steps, err := e.cp.Steps(ctx, inv.RunID)
	if err != nil {
		return fmt.Errorf("read the steps of run %s: %w", inv.RunID, err)
	}
	if len(steps) == 0 {
		return nil
	}
	inv.Steps = steps
	b, err := json.Marshal(inv)
	if err != nil {
		return fmt.Errorf("encode the invocation of run %s: %w", inv.RunID, err)
	}
	if limit, _ := e.invocationLimit(); len(b)+reportReserveBytes+launchSlackBytes <= limit {
		return nil
	}
	ref := &StepsRef{Count: len(steps)}
	for i := range steps {
		ref.Bytes += steps[i].Size()
	}
	inv.Steps, inv.StepsRef = nil, ref
	return nil
}

// Steps returns the run's recorded durable steps ([ControlPlane.Steps]) as
// the API shows them: a secret step without its sealed result. It
// implements [StepReader].
func (e *Engine) Steps(ctx context.Context, id RunID) ([]Step, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	steps, err := e.cp.Steps(ctx, id)
	if err != nil {
		return nil, err
	}
	return PublicSteps(steps), nil
}

// PublicSteps returns steps as clients see them: a secret step keeps its
// name, attempt, times and Secret flag, never its sealed result.
func PublicSteps(steps []Step) []Step {
	if steps == nil {
		return nil
	}
	out := make([]Step, len(steps))
	for i := range steps {
		out[i] = steps[i].Clone()
		out[i].Sealed = nil
	}
	return out
}

// StepReader is an optional [ExecutionEngine] capability: a run's durable
// steps as clients see them (see [PublicSteps]). [*Engine] has it; the
// HTTP API puts them on the run it serves ([Run.Steps]).
type StepReader interface {
	Steps(ctx context.Context, id RunID) ([]Step, error)
}
