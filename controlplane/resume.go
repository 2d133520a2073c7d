package controlplane

import (
	"encoding/json"

	"github.com/sortie-run/sortie"
)

// Resume applies [sortie.ControlPlane.Resume] to r.
func Resume(r *sortie.Run, input json.RawMessage, nowMs int64) error {
	if err := resumable(r); err != nil {
		return err
	}
	if len(input) > sortie.MaxVariablesBytes || (len(input) > 0 && !json.Valid(input)) {
		return sortie.Invalidf("input", "must be valid JSON of at most %d bytes", sortie.MaxVariablesBytes)
	}
	resumed(r, nowMs)
	r.ResumeInput = input
	return nil
}

// ResumeRef applies [sortie.ControlPlane.ResumeRef] to r.
func ResumeRef(r *sortie.Run, ref *sortie.PayloadRef, nowMs int64) error {
	if err := resumable(r); err != nil {
		return err
	}
	resumed(r, nowMs)
	r.ResumeInputRef = ref
	return nil
}

// resumable refuses to resume a run that is not interrupted.
func resumable(r *sortie.Run) error {
	if err := notTerminal(r, "resume"); err != nil {
		return err
	}
	if !r.State.Interrupted() {
		return &sortie.NotInterruptedError{ID: r.ID, State: r.State}
	}
	return nil
}

// resumed makes interrupted r working and due for its next attempt,
// without a resume input yet.
func resumed(r *sortie.Run, nowMs int64) {
	if r.Attempt >= r.Policy.MaxAttempts {
		r.Policy.MaxAttempts = r.Attempt + 1 // a resume is a new attempt, not a retry
	}
	r.State, r.ResumeInput, r.ResumeInputRef = sortie.StateWorking, nil, nil
	r.LeaseExpiresMs = nowMs
	touch(r, nowMs)
}
