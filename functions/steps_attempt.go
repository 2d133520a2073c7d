package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sortie-run/sortie"
)

// errTypeSteps is an attempt whose run's recorded steps could not be read
// or opened.
const errTypeSteps = "steps"

// StepSealer seals and opens the results of secret steps
// ([StepOptions.Secret]) inside the worker; the envelope package's Config
// is one. Its errors never contain a result.
type StepSealer interface {
	// SealStep seals result, bound to inv's run and agent and to the
	// step's name (not to the attempt: every later attempt opens it).
	SealStep(ctx context.Context, inv *sortie.Invocation, name string, result []byte) (json.RawMessage, error)
	// OpenStep opens what SealStep sealed for the same run, agent and
	// name. Errors wrap sortie.ErrUnavailable when a retry may cure them.
	OpenStep(ctx context.Context, inv *sortie.Invocation, name string, sealed json.RawMessage) ([]byte, error)
}

// loadSteps returns the run's recorded steps with every result in the
// clear: those the invocation carries, or those its reference names, read
// from the reporter. A failure is the attempt's outcome, retryable when a
// retry may cure it.
func (a *attempt) loadSteps(ctx context.Context) ([]sortie.Step, *sortie.Outcome) {
	steps := a.inv.Steps
	if ref := a.inv.StepsRef; ref != nil {
		err := call(ctx, reportTimeout, func(ctx context.Context) (err error) {
			steps, err = a.out.rep.Steps(ctx)
			return err
		})
		if err == nil && len(steps) < ref.Count {
			err = fmt.Errorf("the invocation names %d steps, the run holds %d: %w", ref.Count, len(steps), sortie.ErrUnavailable)
		}
		if err != nil {
			o := errorOutcome(errTypeSteps, "read the run's recorded steps: "+err.Error(), true)
			return nil, &o
		}
	}
	out := make([]sortie.Step, len(steps))
	for i, st := range steps {
		out[i] = st.Clone()
		if len(st.Sealed) == 0 {
			continue
		}
		pt, err := a.openStep(ctx, st)
		if err != nil {
			o := errorOutcome(errTypeSteps, fmt.Sprintf("open secret step %q: %v", st.Name, err), errors.Is(err, sortie.ErrUnavailable))
			return nil, &o
		}
		out[i].Result, out[i].Sealed = pt, nil
	}
	return out, nil
}

func (a *attempt) openStep(ctx context.Context, st sortie.Step) (json.RawMessage, error) {
	if a.sealer == nil {
		return nil, errors.New("this worker has no StepSealer to open secret steps")
	}
	pt, err := a.sealer.OpenStep(ctx, a.inv, st.Name, st.Sealed)
	if err == nil && !json.Valid(pt) {
		err = errors.New("it opens to something that is not JSON")
	}
	return pt, err
}

// recordStep records st, completed by this attempt, and returns its result
// as recorded: masked, unless the step is secret; a secret step is sealed
// first, except on a session worker (its host seals it).
func (a *attempt) recordStep(ctx context.Context, st sortie.Step) (json.RawMessage, error) {
	if len(st.Result) > sortie.MaxStepResultBytes {
		return nil, Permanent(sortie.Invalidf("step.result", "step %q: %d bytes of JSON, limit %d (sortie.MaxStepResultBytes)", st.Name, len(st.Result), sortie.MaxStepResultBytes))
	}
	if !st.Secret {
		st.Result = a.mask.json(st.Result)
	}
	result := st.Result
	if st.Secret && !a.session {
		if a.sealer == nil {
			return nil, Permanent(fmt.Errorf("step %q is secret, and this worker has no StepSealer to seal it", st.Name))
		}
		sealed, err := a.sealer.SealStep(ctx, a.inv, st.Name, st.Result)
		if err != nil {
			return nil, fmt.Errorf("seal step %q: %w", st.Name, err)
		}
		st.Result, st.Sealed = nil, sealed
	}
	if err := st.Validate(); err != nil {
		return nil, Permanent(err)
	}
	if err := a.out.step(st); err != nil {
		return nil, err
	}
	return result, nil
}
