package sortie

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// payloadVariables is the payload name of a run's variables.
const payloadVariables = "variables"

// ResultPayloadName is the payload name of attempt's result,
// "result-ATTEMPT": each attempt writes its own object, so a late attempt
// never replaces the result the run recorded.
func ResultPayloadName(attempt int) string { return fmt.Sprintf("result-%d", attempt) }

// StepPayloadName is the payload name of the result of step name kept by
// reference ([Step.ResultRef]) by attempt: "step-HASH-ATTEMPT", HASH the
// first 32 hex digits of the SHA-256 of name. Each attempt writes its own
// object, so an attempt that runs a step again never replaces the object
// another attempt recorded.
func StepPayloadName(name string, attempt int) string {
	sum := sha256.Sum256([]byte(name))
	return fmt.Sprintf("step-%s-%d", hex.EncodeToString(sum[:16]), attempt)
}

// MaxStepSlots is the most step slots a host whose workers reach the
// payload store only through presigned URLs (Lambda, Cloud Run) grants
// one attempt: PUT URLs of the objects [StepSlotPayloadName](attempt, 0)
// .. (attempt, MaxStepSlots-1), into which the attempt keeps, by
// reference, the results of the steps it records over the inline limit
// (a step's name, hence its [StepPayloadName], is not known when the
// attempt is launched). The host grants fewer when more would take the
// sealed URLs over [MaxSealedPayloadURLsBytes]. An attempt that has used
// them all fails its next such step with a retryable error: the next
// attempt replays the recorded steps and gets fresh slots.
const MaxStepSlots = 8

// StepSlotPayloadName is the payload name of step slot k (from 0) of
// attempt, "step-slot-ATTEMPT-K" (see [MaxStepSlots]): the object a
// worker reaching its store through presigned URLs keeps a step result
// in by reference ([Step.ResultRef]).
func StepSlotPayloadName(attempt, k int) string { return fmt.Sprintf("step-slot-%d-%d", attempt, k) }

// variablesLimit is the largest variables object a submission may carry,
// and what that limit is: the payload store's per-payload maximum, else
// [MaxVariablesBytes].
func (e *Engine) variablesLimit() (int, string) {
	if e.opts.Payloads != nil {
		l := e.opts.Payloads.Limits()
		what := "the payload store's per-payload maximum"
		if l.MaxPayloadSetting != "" {
			what += ": " + l.MaxPayloadSetting
		}
		return int(min(l.MaxPayloadBytes, 1<<30)), what
	}
	return MaxVariablesBytes, "sortie.MaxVariablesBytes; this host has no payload store for larger ones"
}

// offloadVariables keeps run's variables in the payload store when they
// are over [MaxVariablesBytes] or would take its invocation over the
// launcher's limit, leaving a reference on the run. Without a store it
// does nothing (checkBudget then refuses what the launcher cannot carry).
func (e *Engine) offloadVariables(ctx context.Context, run *Run) error {
	if e.opts.Payloads == nil || len(run.Variables) <= 2 {
		return nil
	}
	if len(run.Variables) <= MaxVariablesBytes && e.checkBudget(run) == nil {
		return nil
	}
	ref, err := e.opts.Payloads.Put(ctx, run.ID, run.Agent.Name, payloadVariables, "variables", run.Variables)
	if err != nil {
		return fmt.Errorf("submit: store the variables of run %s: %w", run.ID, err)
	}
	AddPayloadWrite(ctx, ref)
	run.Variables, run.VariablesRef = nil, ref
	return nil
}

// dropPayloads deletes what a submission stored for a run that was not
// created (an idempotent repeat, a failed reservation).
func (e *Engine) dropPayloads(ctx context.Context, run *Run) {
	if e.opts.Payloads == nil || run.VariablesRef == nil {
		return
	}
	if err := e.opts.Payloads.DeleteRun(context.WithoutCancel(ctx), run.ID); err != nil {
		e.log.Warn("payloads of a run not created are left for the orphan sweep", "run", run.ID, "err", err)
	}
}

// inlined fills in run's Variables, Result, ResumeInput and interrupt
// Checkpoint from the payload store when the run keeps them there, so a
// client reads them as if inline; the references stay on the run. Errors
// wrap [ErrPayloadIntegrity] for an object missing or not the one
// referenced, and name its key and SHA-256.
func (e *Engine) inlined(ctx context.Context, run *Run) (*Run, error) {
	if run == nil || !run.HasPayloadRefs() {
		return run, nil
	}
	if e.opts.Payloads == nil {
		return nil, fmt.Errorf("run %s keeps payloads in a store and this engine has none: %w", run.ID, ErrUnavailable)
	}
	var err error
	if run.VariablesRef != nil && len(run.Variables) == 0 {
		if run.Variables, err = e.readPayload(ctx, run.ID, run.Agent.Name, run.VariablesRef, "the variables"); err != nil {
			return nil, err
		}
	}
	if run.ResultRef != nil && len(run.Result) == 0 {
		if run.Result, err = e.readPayload(ctx, run.ID, run.Agent.Name, run.ResultRef, "the result"); err != nil {
			return nil, err
		}
	}
	if err := e.inlineResume(ctx, run); err != nil {
		return nil, err
	}
	return run, nil
}

// readPayload reads what (for example "the result") of run id, stored
// for agent, from the payload store; its error names ref's key and
// SHA-256 whatever the store's says, and wraps it ([ErrPayloadIntegrity]
// for an object missing or not the one referenced).
func (e *Engine) readPayload(ctx context.Context, id RunID, agent string, ref *PayloadRef, what string) ([]byte, error) {
	b, err := e.opts.Payloads.Get(ctx, id, agent, ref)
	if err != nil {
		return nil, fmt.Errorf("read %s of run %s (payload %s, SHA-256 %s): %w", what, id, ref.Key, ref.SHA256, err)
	}
	return b, nil
}

// HasPayloadRefs reports whether r keeps a payload in a [PayloadStore]:
// its variables, result, resume input or interrupt checkpoint.
func (r *Run) HasPayloadRefs() bool {
	return r.VariablesRef != nil || r.ResultRef != nil || r.ResumeInputRef != nil ||
		(r.Interrupt != nil && r.Interrupt.CheckpointRef != nil)
}

// StoredReader is an optional [ExecutionEngine] capability: a run as its
// record keeps it, without the payloads [Engine.Get] reads back from the
// payload store. [Client.Wait] polls with it and reads the payloads once.
type StoredReader interface {
	GetStored(ctx context.Context, id RunID) (*Run, error)
}

// GetStored is [Engine.Get] without reading payloads back: a run that
// keeps its variables or result in the payload store has only the
// references ([Run.VariablesRef], [Run.ResultRef]). Followers that only
// watch a run's state use it.
func (e *Engine) GetStored(ctx context.Context, id RunID) (*Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	run, err := e.cp.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	e.queuePosition(ctx, run)
	return e.priced(run), nil
}

// MaxVariablesBytes is the largest variables object the engine takes in a
// submission: its payload store's per-payload maximum, else
// [MaxVariablesBytes].
func (e *Engine) MaxVariablesBytes() int {
	n, _ := e.variablesLimit()
	return n
}

// MaxVariablesSetting names what sets [Engine.MaxVariablesBytes], for a
// refusal to name it: "the payload store's per-payload maximum" followed
// by the store's PayloadLimits.MaxPayloadSetting when it has one (a
// host's "--max-payload-bytes, env SORTIE_MAX_PAYLOAD_BYTES"), else
// "sortie.MaxVariablesBytes; ...".
func (e *Engine) MaxVariablesSetting() string {
	_, what := e.variablesLimit()
	return what
}

// Stored returns run as its record keeps it: without the payloads
// [Engine.Get] read back (their references stay).
func Stored(run *Run) *Run {
	if run == nil || !run.HasPayloadRefs() {
		return run
	}
	c := *run
	if c.VariablesRef != nil {
		c.Variables = nil
	}
	if c.ResultRef != nil {
		c.Result = nil
	}
	if c.ResumeInputRef != nil {
		c.ResumeInput = nil
	}
	if in := c.Interrupt; in != nil && in.CheckpointRef != nil {
		i := *in
		i.Checkpoint, c.Interrupt = nil, &i
	}
	return &c
}

// SweepPayloads deletes the payload objects of runs the control plane
// does not hold that were created more than minAge ago (a submission that
// failed after storing its variables, a run deleted or expired), and
// returns how many runs it swept. Without a payload store it does
// nothing.
func (e *Engine) SweepPayloads(ctx context.Context, minAge time.Duration) (int, error) {
	if e.opts.Payloads == nil {
		return 0, nil
	}
	held := func(ctx context.Context, id RunID) (bool, error) {
		_, err := e.cp.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	return e.opts.Payloads.Sweep(ctx, held, e.now().Add(-minAge))
}
