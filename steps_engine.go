package sortie

import (
	"context"
	"encoding/json"
	"fmt"
)

// withSteps hands inv the run's recorded steps: in the invocation when it
// stays under the launcher's limit ([InvocationLimiter], else
// [MaxInvocationBytes]) with room for its report and what the engine's
// Sealer adds ([SealReserver]), else as a [StepsRef] the worker resolves where it
// reports, which keeps the references of the results kept by reference
// for the engine's [Sealer] ([Invocation.StepResultRefs]). A first
// attempt has none to read.
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
	if limit, _ := e.invocationLimit(); len(b)+reportReserveBytes+launchSlackBytes+e.sealReserve() <= limit {
		return nil
	}
	ref := &StepsRef{Count: len(steps)}
	for i := range steps {
		ref.Bytes += steps[i].Size()
		if r := steps[i].ResultRef; r != nil {
			ref.ResultRefs = append(ref.ResultRefs, r)
		}
	}
	inv.Steps, inv.StepsRef = nil, ref
	return nil
}

// Steps returns the run's recorded durable steps ([ControlPlane.Steps]) as
// the API shows them: a secret step without its sealed result, and the
// result of a step kept by reference read back from the payload store as
// if inline (as [Engine.Get] reads a run's variables and result), its
// reference kept. It implements [StepReader]. Errors wrap
// [ErrPayloadIntegrity] for an object that is not the one referenced.
func (e *Engine) Steps(ctx context.Context, id RunID) ([]Step, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	steps, err := e.cp.Steps(ctx, id)
	if err != nil {
		return nil, err
	}
	steps = PublicSteps(steps)
	return steps, e.inlinedSteps(ctx, id, steps)
}

// inlinedSteps fills in the Result of each step of run id kept by
// reference, except a secret step's.
func (e *Engine) inlinedSteps(ctx context.Context, id RunID, steps []Step) error {
	agent := ""
	for i := range steps {
		st := &steps[i]
		if st.ResultRef == nil || st.Secret {
			continue
		}
		if e.opts.Payloads == nil {
			return fmt.Errorf("run %s keeps step results in a payload store and this engine has none: %w", id, ErrUnavailable)
		}
		if agent == "" {
			run, err := e.cp.Get(ctx, id)
			if err != nil {
				return err
			}
			agent = run.Agent.Name
		}
		b, err := e.readPayload(ctx, id, agent, st.ResultRef, fmt.Sprintf("the result of step %q", st.Name))
		if err != nil {
			return err
		}
		st.Result = b
	}
	return nil
}

// PublicSteps returns steps as clients see them: a secret step keeps its
// name, attempt, times, Secret flag and the reference of a result kept by
// reference (a sealed object's key, size and SHA-256), never its sealed
// result.
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
