package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload/sealed"
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
		if refused := a.openResult(ctx, &out[i]); refused != nil {
			return nil, refused
		}
	}
	return out, nil
}

// openResult puts st's result in the clear: a secret step's sealed
// result opened, a result kept by reference read from the payload store
// (unless a warm pool's process runs the handler: it reads it itself). A
// failure is the attempt's outcome: retryable when a retry may cure it,
// not for an object that is not the one referenced
// (sortie.ErrPayloadIntegrity).
func (a *attempt) openResult(ctx context.Context, st *sortie.Step) *sortie.Outcome {
	var (
		pt  []byte
		err error
	)
	switch {
	case len(st.Sealed) > 0:
		pt, err = a.openStep(ctx, *st)
	case st.ResultRef != nil && a.w.runsHere(a.inv.Agent.Runtime):
		pt, err = a.readStep(ctx, st)
	case st.ResultRef != nil: // the warm process reads it
		a.warmSteps.add(st.ResultRef, false)
		return nil
	default:
		return nil
	}
	if err != nil {
		o := errorOutcome(errTypeSteps, fmt.Sprintf("read the result of step %q: %v", st.Name, err), errors.Is(err, sortie.ErrUnavailable))
		return &o
	}
	st.Result, st.Sealed, st.ResultRef = pt, nil, nil
	return nil
}

// readStep reads the result st keeps by reference.
func (a *attempt) readStep(ctx context.Context, st *sortie.Step) ([]byte, error) {
	store, refused := a.payloadStore(ctx)
	if refused != nil {
		return nil, errors.New(refused.Error.Message)
	}
	if store == nil {
		return nil, errors.New("it is kept in a payload store and this worker has none (Worker.Payloads)")
	}
	pt, err := store.Get(ctx, a.inv.RunID, a.inv.Agent.Name, st.ResultRef)
	if err == nil && !json.Valid(pt) {
		err = fmt.Errorf("it reads as something that is not JSON: %w", sortie.ErrPayloadIntegrity)
	}
	return pt, err
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
// first, except on a session worker (its host seals it); a result over
// sortie.MaxStepResultBytes, inline or sealed, is kept by reference.
func (a *attempt) recordStep(ctx context.Context, st sortie.Step) (json.RawMessage, error) {
	if !st.Secret {
		st.Result = a.mask.json(st.Result)
	}
	result := st.Result
	if st.ResultRef != nil && !a.session { // kept by the warm process that ran it
		a.warmSteps.add(st.ResultRef, true)
		a.stepBytes.Add(st.ResultRef.Size)
	}
	if err := a.keepStep(ctx, &st); err != nil {
		return nil, err
	}
	if ref := st.ResultRef; ref != nil && !a.stepKey(st, ref.Key) {
		return nil, Permanent(sortie.Invalidf("step.result_ref", "step %q: key %.80q is not the step's object of this attempt", st.Name, ref.Key))
	}
	if err := st.Validate(); err != nil {
		return nil, Permanent(err)
	}
	if err := a.out.step(st); err != nil {
		return nil, err
	}
	return result, nil
}

// keepStep puts st's result in the form the control plane keeps: sealed
// when it is secret (unless a session's host seals it), by reference when
// it is over sortie.MaxStepResultBytes (sortie.MaxSecretStepInlineBytes
// for a secret one), or its sealed form is.
func (a *attempt) keepStep(ctx context.Context, st *sortie.Step) error {
	byRef := len(st.Result) > sortie.MaxStepResultBytes || (st.Secret && len(st.Result) > sortie.MaxSecretStepInlineBytes)
	if st.Secret && !a.session && st.ResultRef == nil && !byRef {
		if a.sealer == nil {
			return Permanent(fmt.Errorf("step %q is secret, and this worker has no StepSealer to seal it", st.Name))
		}
		box, err := a.sealer.SealStep(ctx, a.inv, st.Name, st.Result)
		if err != nil {
			return fmt.Errorf("seal step %q: %w", st.Name, err)
		}
		if byRef = len(box) > sortie.MaxStepResultBytes; !byRef {
			st.Result, st.Sealed = nil, box
		}
	}
	if byRef {
		return a.storeStep(ctx, st)
	}
	return nil
}

// stepKey reports whether key may hold the result st, completed by this
// attempt, keeps by reference: its [sortie.StepPayloadName], or one of
// the attempt's step slots ([sortie.StepSlotPayloadName]).
func (a *attempt) stepKey(st sortie.Step, key string) bool {
	if key == sealed.Key(a.inv.RunID, sortie.StepPayloadName(st.Name, st.Attempt)) {
		return true
	}
	for k := range sortie.MaxStepSlots {
		if key == sealed.Key(a.inv.RunID, sortie.StepSlotPayloadName(a.inv.Attempt, k)) {
			return true
		}
	}
	return false
}

// storeStep keeps st's result, over sortie.MaxStepResultBytes inline (or
// sealed), in the attempt's payload store, sealed like every payload, and
// leaves st naming it by reference: as sortie.StepPayloadName(name,
// attempt), or, on a worker that reaches its store only through its
// invocation's URLs (Lambda, Cloud Run), in the attempt's next step slot
// (stepObject). A result over the store's per-payload limit and a worker
// without a store are refused with a permanent error naming the limit;
// used-up step slots with a retryable one naming sortie.MaxStepSlots.
func (a *attempt) storeStep(ctx context.Context, st *sortie.Step) error {
	n := len(st.Result)
	limit, what := sortie.MaxStepResultBytes, "sortie.MaxStepResultBytes"
	if st.Secret && n <= limit {
		limit, what = sortie.MaxSecretStepInlineBytes, "sortie.MaxSecretStepInlineBytes, for a secret step"
	}
	over := fmt.Sprintf("step %q: %d bytes of JSON, over the inline limit of %d (%s)", st.Name, n, limit, what)
	store, refused := a.payloadStore(ctx)
	if refused != nil {
		err := fmt.Errorf("%s; %s", over, refused.Error.Message)
		if !refused.Error.Retryable {
			err = Permanent(err)
		}
		return err
	}
	if store == nil {
		return Permanent(sortie.Invalidf("step.result", "%s; this worker has no payload store for larger ones", over))
	}
	name, err := a.stepObject(st, over)
	if err != nil {
		return err
	}
	ref, err := store.Put(ctx, a.inv.RunID, a.inv.Agent.Name, name, "step.result", st.Result)
	if err != nil {
		if errors.Is(err, sortie.ErrUnavailable) {
			return fmt.Errorf("step %q: store its result: %w", st.Name, err)
		}
		return Permanent(fmt.Errorf("step %q: store its result: %w", st.Name, err))
	}
	st.Result, st.Sealed, st.ResultRef = nil, nil, ref
	a.stepBytes.Add(int64(n))
	return nil
}

// stepObject returns the payload name st's result is kept under:
// sortie.StepPayloadName(name, attempt), or, when the attempt reaches its
// store through URLs, its next free step slot, taken at once (steps may
// run concurrently). With every slot taken it returns a retryable error
// naming sortie.MaxStepSlots: the next attempt replays the steps recorded
// so far through its GET URLs and gets fresh slots, so a retry makes
// progress. A host that granted no slot at all (the URLs of the steps
// recorded by reference fill sortie.MaxSealedPayloadURLsBytes) will grant
// none to a retry either: that error is permanent.
func (a *attempt) stepObject(st *sortie.Step, over string) (string, error) {
	if len(a.inv.SealedPayloadURLs) == 0 {
		return sortie.StepPayloadName(st.Name, a.inv.Attempt), nil
	}
	if a.stepSlots == 0 {
		return "", Permanent(fmt.Errorf("%s; this attempt's host granted it no step slot (the URLs that read the steps recorded by reference leave no room under sortie.MaxSealedPayloadURLsBytes)", over))
	}
	k := int(a.slotsUsed.Add(1)) - 1
	if k >= a.stepSlots {
		return "", fmt.Errorf("%s; this attempt has used all %d step slots its host granted (sortie.MaxStepSlots is %d): the next attempt replays the steps recorded so far and gets fresh slots", over, a.stepSlots, sortie.MaxStepSlots)
	}
	return sortie.StepSlotPayloadName(a.inv.Attempt, k), nil
}

// warmStepIO counts the step objects an attempt's warm process read and
// wrote itself, for the attempt's usage. It is safe for concurrent use.
type warmStepIO struct {
	mu            sync.Mutex
	writes, reads int64
	kind          string
}

func (w *warmStepIO) add(ref *sortie.PayloadRef, write bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if write {
		w.writes++
	} else {
		w.reads++
	}
	w.kind = sortie.PayloadStoreKind(ref.Store)
}

func (w *warmStepIO) counts() (writes, reads int64, kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.reads, w.kind
}
