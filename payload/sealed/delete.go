package sealed

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/sortie-run/sortie"
)

// deleteURLLife is how long a DELETE URL lives: it is used at once.
const deleteURLLife = time.Minute

// maxAttempts bounds the attempts whose objects RunKeys names (a step's
// attempt is at most 1000).
const maxAttempts = 1000

// RunKeys returns the keys of run's objects in the store named store that
// can be named without listing the store, sorted, each once: every
// payload run or its steps reference there (variables, result, resume
// input, interrupt checkpoint, step results) and, for each attempt N up
// to the run's last (at most 1000), [sortie.ResultPayloadName](N),
// [sortie.CheckpointPayloadName](N) and its step slots
// ([sortie.StepSlotPayloadName](N, K), K < [sortie.MaxStepSlots]), which
// an attempt may have written without the run recording it. A reference to another store or to an
// object outside the run's (see [CheckRef]) is left out. Objects named
// by nothing on the run (the input of an earlier resume, replaced since)
// are not in it.
func RunKeys(store string, run *sortie.Run, steps []sortie.Step) []string {
	refs := []*sortie.PayloadRef{run.VariablesRef, run.ResultRef, run.ResumeInputRef}
	if run.Interrupt != nil {
		refs = append(refs, run.Interrupt.CheckpointRef)
	}
	for i := range steps {
		refs = append(refs, steps[i].ResultRef)
	}
	var keys []string
	for _, ref := range refs {
		if ref != nil && CheckRef(store, run.ID, ref) == nil {
			keys = append(keys, ref.Key)
		}
	}
	last := run.Attempt
	for _, a := range run.Attempts {
		last = max(last, a.Number)
	}
	for n := 1; n <= min(last, maxAttempts); n++ {
		keys = append(keys, Key(run.ID, sortie.ResultPayloadName(n)), Key(run.ID, sortie.CheckpointPayloadName(n)))
		for k := range sortie.MaxStepSlots {
			keys = append(keys, Key(run.ID, sortie.StepSlotPayloadName(n, k)))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Deleter deletes a run's objects through DELETE URLs its signer signs
// ([URLSigner]; package payload/s3presign's Signer in the Lambda
// reconciler, which holds no storage client and cannot list the bucket).
// It is the engine's sortie.EngineOptions.ObjectDeleter there.
type Deleter struct {
	signer URLSigner
	client *http.Client
}

var _ sortie.RunObjectDeleter = (*Deleter)(nil)

// NewDeleter returns the Deleter of the store signer signs for. client
// may be nil: a client that follows no redirect.
func NewDeleter(signer URLSigner, client *http.Client) *Deleter {
	if client == nil {
		client = noRedirects()
	}
	return &Deleter{signer: signer, client: client}
}

// DeleteRunObjects implements [sortie.RunObjectDeleter]: it deletes each
// key of [RunKeys] in turn, a 2xx or 404 answer being success (S3 answers
// 204 for a key that does not exist), and goes on past a failure. The
// error joins the failures, each naming its key (never a URL); a context
// ending stops it.
func (d *Deleter) DeleteRunObjects(ctx context.Context, run *sortie.Run, steps []sortie.Step) error {
	var errs []error
	for _, key := range RunKeys(d.signer.Name(), run, steps) {
		if err := d.delete(ctx, key); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// delete deletes the object key through a DELETE URL.
func (d *Deleter) delete(ctx context.Context, key string) error {
	store := d.signer.Name()
	u, err := d.signer.SignURL(ctx, http.MethodDelete, key, deleteURLLife)
	if err != nil {
		return err
	}
	resp, err := do(ctx, d.client, http.MethodDelete, u, nil)
	if err != nil {
		return wrap(store, "delete", key, err)
	}
	defer drain(resp)
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return status(store, "delete", key, resp)
}
