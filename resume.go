package sortie

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CheckpointPayloadName is the payload name of the checkpoint attempt's
// interrupt keeps in the payload store, "checkpoint-ATTEMPT".
func CheckpointPayloadName(attempt int) string { return fmt.Sprintf("checkpoint-%d", attempt) }

// resumeInputPayloadName is the payload name of a resume input kept in
// the payload store, "resume-input-ATTEMPT-NONCE": ATTEMPT is the attempt
// it resumes into and NONCE is random, so no resume (not even a
// concurrent one that loses) replaces another's object.
func resumeInputPayloadName(attempt int) string {
	return fmt.Sprintf("resume-input-%d-%s", attempt, strings.ToLower(rand.Text()[:10]))
}

// Resume continues an interrupted run with input as a new attempt. Input
// over [MaxVariablesBytes], or that would take the resumed invocation
// over the launcher's limit ([InvocationLimiter]), is kept in the payload
// store ([EngineOptions.Payloads]) and the run holds its reference. It
// returns ErrClosed after Close, and a [*ValidationError] naming the field
// and the limit, before anything is stored, for input that fits neither
// (no payload store, or over the store's limits). An empty input is JSON
// null: no answer (an auth-required run's usual resume), the same from
// every client.
func (e *Engine) Resume(ctx context.Context, id RunID, input json.RawMessage) (*Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if err := e.life.acquire("resume"); err != nil {
		return nil, err
	}
	defer e.life.release()
	ctx = WithMeter(ctx, &Meter{}) // the resumed attempt's usage counts the input stored
	run, err := e.resume(ctx, id, input)
	if err != nil {
		return nil, err
	}
	run, err = e.launch(ctx, run)
	return e.priced(run), err
}

// resume continues run id with input, inline when it fits: under
// [MaxVariablesBytes] and the launcher's invocation limit. Input over
// either is kept in the payload store and the run holds its reference
// ([Run.ResumeInputRef]); without a store it is refused, naming the
// field and the limit, before anything is stored.
func (e *Engine) resume(ctx context.Context, id RunID, input json.RawMessage) (*Run, error) {
	if len(input) <= MaxVariablesBytes {
		err := e.checkResumeBudget(ctx, id, input)
		if err == nil {
			return e.cp.Resume(ctx, id, input)
		}
		if e.opts.Payloads == nil || !errors.Is(err, ErrInvalidArgument) {
			return nil, err
		}
	} else if e.opts.Payloads == nil {
		return nil, invalidf("input", "%d bytes, limit %d (sortie.MaxVariablesBytes; this host has no payload store for larger ones)", len(input), MaxVariablesBytes)
	}
	run, err := e.cp.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !run.State.Interrupted() {
		return e.cp.Resume(ctx, id, input) // says what is wrong
	}
	ref, err := e.offloadResumeInput(ctx, run, input)
	if err != nil {
		return nil, err
	}
	resumed, err := e.cp.ResumeRef(ctx, id, ref)
	if err != nil {
		e.log.Warn("a resume input stored for a resume that failed is left until the run is deleted", "run", id, "key", ref.Key, "err", err)
	}
	return resumed, err
}

// offloadResumeInput checks input and keeps it in the payload store for
// interrupted run's next attempt, returning its reference. JSON that is
// not valid, input over the store's per-payload or per-run limit, and an
// invocation still over the launcher's limit with the reference are
// refused before anything is stored.
func (e *Engine) offloadResumeInput(ctx context.Context, run *Run, input json.RawMessage) (*PayloadRef, error) {
	if err := checkJSON("input", input, len(input)); err != nil {
		return nil, err
	}
	name := resumeInputPayloadName(run.Attempt + 1)
	next := *run
	next.State, next.ResumeInput = StateWorking, nil
	next.ResumeInputRef = &PayloadRef{Store: strings.Repeat("s", 256), Key: "runs/" + string(run.ID) + "/" + name,
		Size: 1 << 30, SHA256: strings.Repeat("0", 64)} // the largest a reference encodes
	if err := e.checkBudget(&next); err != nil {
		return nil, err
	}
	ref, err := e.opts.Payloads.Put(ctx, run.ID, run.Agent.Name, name, "input", input)
	if err != nil {
		return nil, fmt.Errorf("resume: store the input of run %s: %w", run.ID, err)
	}
	AddPayloadWrite(ctx, ref)
	return ref, nil
}

// inlineResume fills in run's ResumeInput and its interrupt's Checkpoint
// from the payload store when the run keeps them there (the interrupt is
// copied, not changed in place).
func (e *Engine) inlineResume(ctx context.Context, run *Run) error {
	var err error
	if run.ResumeInputRef != nil && len(run.ResumeInput) == 0 {
		if run.ResumeInput, err = e.readPayload(ctx, run.ID, run.Agent.Name, run.ResumeInputRef, "the resume input"); err != nil {
			return err
		}
	}
	if in := run.Interrupt; in != nil && in.CheckpointRef != nil && len(in.Checkpoint) == 0 {
		c := *in
		if c.Checkpoint, err = e.readPayload(ctx, run.ID, run.Agent.Name, in.CheckpointRef, "the interrupt checkpoint"); err != nil {
			return err
		}
		run.Interrupt = &c
	}
	return nil
}
