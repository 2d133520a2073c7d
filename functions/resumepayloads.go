package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sortie-run/sortie"
)

// readPayload reads what ref names from the attempt's payload store. A
// failure is the attempt's outcome, of error type "payload": retryable
// when the store was unavailable, not when the object is not the one
// referenced (sortie.ErrPayloadIntegrity).
func (a *attempt) readPayload(ctx context.Context, ref *sortie.PayloadRef, what string) ([]byte, *sortie.Outcome) {
	store, refused := a.payloadStore(ctx)
	if refused != nil {
		return nil, refused
	}
	if store == nil {
		o := errorOutcome(errTypePayload, "the run keeps its "+what+" in a payload store and this worker has none (Worker.Payloads, or Worker.PayloadURLs and the invocation's payload URLs)", false)
		return nil, &o
	}
	b, err := store.Get(ctx, a.inv.RunID, a.inv.Agent.Name, ref)
	if err != nil {
		o := errorOutcome(errTypePayload, "read the run's "+what+": "+err.Error(), errors.Is(err, sortie.ErrUnavailable))
		return nil, &o
	}
	return b, nil
}

// loadResume reads a resumed attempt's input and checkpoint from the
// payload store when its invocation names them by reference
// (sortie.Resume.InputRef, CheckpointRef), as loadVariables reads the
// variables, so the handler's Call.Resume has them inline.
func (w *Worker) loadResume(ctx context.Context, a *attempt) *sortie.Outcome {
	r := a.inv.Resume
	if r == nil || (r.InputRef == nil && r.CheckpointRef == nil) || !w.runsHere(a.inv.Agent.Runtime) {
		return nil
	}
	res := *r
	for _, p := range []struct {
		ref  *sortie.PayloadRef
		dst  *json.RawMessage
		what string
	}{{r.InputRef, &res.Input, "resume input"}, {r.CheckpointRef, &res.Checkpoint, "interrupt checkpoint"}} {
		if p.ref == nil {
			continue
		}
		b, refused := a.readPayload(ctx, p.ref, p.what)
		if refused != nil {
			return refused
		}
		*p.dst = b
	}
	res.InputRef, res.CheckpointRef = nil, nil
	inv := *a.inv
	inv.Resume = &res
	a.inv = &inv
	return nil
}

// storeCheckpoint keeps an interrupt's checkpoint over
// sortie.MaxResultBytes in the worker's payload store, object
// sortie.CheckpointPayloadName, and returns the interrupt naming it by
// reference, and the bytes stored. Without a store, or over the store's
// limits, the outcome is a permanent error of type "output" naming the
// size and the limit.
func (w *Worker) storeCheckpoint(ctx context.Context, a *attempt, o sortie.Outcome) (sortie.Outcome, int64) {
	n := len(o.Interrupt.Checkpoint)
	if n <= sortie.MaxResultBytes {
		return o, 0
	}
	store, refused := a.payloadStore(ctx)
	if refused != nil {
		return *refused, 0
	}
	if store == nil {
		return errorOutcome(errTypeOutput, fmt.Sprintf("interrupt checkpoint is %d bytes of JSON, limit %d (sortie.MaxResultBytes; this worker has no payload store for larger ones)", n, sortie.MaxResultBytes), false), 0
	}
	inv := a.inv
	ref, err := store.Put(ctx, inv.RunID, inv.Agent.Name, sortie.CheckpointPayloadName(inv.Attempt), "interrupt.checkpoint", o.Interrupt.Checkpoint)
	if err != nil {
		return errorOutcome(errTypeOutput, "store the interrupt checkpoint: "+err.Error(), errors.Is(err, sortie.ErrUnavailable)), 0
	}
	in := *o.Interrupt
	in.Checkpoint, in.CheckpointRef = nil, ref
	o.Interrupt = &in
	return o, int64(n)
}

// writtenRef is the payload o names by reference: its result or its
// interrupt's checkpoint, or nil.
func writtenRef(o sortie.Outcome) *sortie.PayloadRef {
	if o.Interrupt != nil {
		return o.Interrupt.CheckpointRef
	}
	return o.ResultRef
}
