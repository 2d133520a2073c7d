package functions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sortie-run/sortie"
)

// errTypePayload is an attempt whose variables, kept in the payload
// store, could not be read.
const errTypePayload = "payload"

// runsHere reports whether the runtime ref runs its handler in this
// process (or an exec process per attempt) rather than on a warm pool,
// whose process reads the variables itself.
func (w *Worker) runsHere(ref string) bool {
	kind, _, _ := strings.Cut(ref, ":")
	if kind == "go" {
		return w.Warm["go"] == nil
	}
	return w.Warm[ref] == nil
}

// loadVariables reads the attempt's variables from the worker's payload
// store when its invocation names them by reference. A failure is the
// attempt's outcome: retryable when the store was unavailable, not when
// the object is not the one referenced (sortie.ErrPayloadIntegrity).
func (w *Worker) loadVariables(ctx context.Context, a *attempt) *sortie.Outcome {
	ref := a.inv.VariablesRef
	if ref == nil || !w.runsHere(a.inv.Agent.Runtime) {
		return nil
	}
	if w.Payloads == nil {
		o := errorOutcome(errTypePayload, "the run's variables are kept in a payload store and this worker has none (Worker.Payloads)", false)
		return &o
	}
	vars, err := w.Payloads.Get(ctx, a.inv.RunID, a.inv.Agent.Name, ref)
	if err != nil {
		o := errorOutcome(errTypePayload, "read the run's variables: "+err.Error(), errors.Is(err, sortie.ErrUnavailable))
		return &o
	}
	inv := *a.inv
	inv.Variables, inv.VariablesRef = vars, nil
	a.inv = &inv
	return nil
}

// storeResult keeps a result over sortie.MaxResultBytes in the worker's
// payload store and returns the outcome naming it by reference, and the
// bytes stored. Without a store, or over the store's limits, the outcome
// is a permanent error of type "output" naming the size and the limit.
func (w *Worker) storeResult(ctx context.Context, inv *sortie.Invocation, o sortie.Outcome) (sortie.Outcome, int64) {
	n := len(o.Result)
	if n <= sortie.MaxResultBytes {
		return o, 0
	}
	if w.Payloads == nil {
		return errorOutcome(errTypeOutput, fmt.Sprintf("output is %d bytes of JSON, limit %d (sortie.MaxResultBytes; this worker has no payload store for larger ones)", n, sortie.MaxResultBytes), false), 0
	}
	ref, err := w.Payloads.Put(ctx, inv.RunID, inv.Agent.Name, sortie.ResultPayloadName(inv.Attempt), "output", o.Result)
	if err != nil {
		return errorOutcome(errTypeOutput, "store the output: "+err.Error(), errors.Is(err, sortie.ErrUnavailable)), 0
	}
	return sortie.Outcome{ResultRef: ref}, int64(n)
}
