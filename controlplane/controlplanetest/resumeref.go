package controlplanetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

// payloadRef is a valid reference to object name of run id.
func payloadRef(id sortie.RunID, name string) *sortie.PayloadRef {
	return &sortie.PayloadRef{Store: "file", Key: "runs/" + string(id) + "/" + name, Size: 300 << 10, SHA256: strings.Repeat("ab", 32)}
}

// An interrupt's checkpoint and a resume input kept by reference: the
// run keeps the references (never a value), ResumeRef refuses a bad
// reference naming the field and a run that is not interrupted, the next
// interrupt clears the resume input's reference, and an inline Resume
// after one holds no reference.
func testResumeByReference(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	in := &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "more?", CheckpointRef: payloadRef(run.ID, "checkpoint-1")}
	paused := f.finish(run.ID, 1, lid, sortie.Outcome{Interrupt: in}, T0+3)
	if diff := cmp.Diff(in, f.get(run.ID).Interrupt); diff != "" || paused.State != sortie.StateInputRequired {
		t.Fatalf("Finish(interrupt by reference): state %s, stored interrupt (-want +got):\n%s", paused.State, diff)
	}
	for field, ref := range map[string]*sortie.PayloadRef{
		"input_ref":     nil,
		"input_ref.key": {Store: "file", Key: "runs/../x", SHA256: strings.Repeat("ab", 32)},
	} {
		checkResumeRefRefused(t, f, run.ID, field, ref)
	}
	// A valid reference to another run's object.
	checkResumeRefRefused(t, f, run.ID, "input_ref.key", payloadRef(sortie.NewRunID(time.UnixMilli(T0)), "resume-input-2-abc"))
	f.unchanged("ResumeRef with bad references", run.ID, paused)

	ref := payloadRef(run.ID, "resume-input-2-abc")
	resumed, err := f.cp.ResumeRef(f.ctx, run.ID, ref)
	must(t, "ResumeRef(interrupted run)", err)
	if resumed.State != sortie.StateWorking || len(resumed.ResumeInput) != 0 || !cmp.Equal(resumed.ResumeInputRef, ref) || resumed.LeaseExpiresMs == 0 {
		t.Fatalf("ResumeRef = state %s, input %q, ref %+v, lease %d; want working with only the reference, due now",
			resumed.State, resumed.ResumeInput, resumed.ResumeInputRef, resumed.LeaseExpiresMs)
	}
	if got := f.get(run.ID); !cmp.Equal(got.ResumeInputRef, ref) || !cmp.Equal(got.Interrupt, in) {
		t.Errorf("Get after ResumeRef = input ref %+v, interrupt %+v; want both references kept", got.ResumeInputRef, got.Interrupt)
	}
	_, err = f.cp.ResumeRef(f.ctx, run.ID, ref)
	wantErr(t, "ResumeRef(working run)", err, sortie.ErrConflict)

	next, lid2 := f.next(resumed, T0+5)
	again := f.finish(run.ID, next.Attempt, lid2, interrupt(sortie.StateInputRequired), T0+7)
	if again.ResumeInputRef != nil || again.Interrupt.CheckpointRef != nil {
		t.Errorf("after a second interrupt: input ref %+v, checkpoint ref %+v; want none", again.ResumeInputRef, again.Interrupt.CheckpointRef)
	}
	inline, err := f.cp.Resume(f.ctx, run.ID, json.RawMessage(`{"answer":1}`))
	must(t, "Resume(inline after a reference)", err)
	if inline.ResumeInputRef != nil || string(inline.ResumeInput) != `{"answer":1}` {
		t.Errorf("Resume(inline) = input %s, ref %+v; want the input inline, no reference", inline.ResumeInput, inline.ResumeInputRef)
	}
	fresh := f.submitted(T0 + 10)
	_, err = f.cp.ResumeRef(f.ctx, fresh.ID, payloadRef(fresh.ID, "resume-input-1-abc"))
	wantErr(t, "ResumeRef(submitted run)", err, sortie.ErrConflict)
}

func checkResumeRefRefused(t *testing.T, f *fixture, id sortie.RunID, field string, ref *sortie.PayloadRef) {
	t.Helper()
	_, err := f.cp.ResumeRef(f.ctx, id, ref)
	if ve := (*sortie.ValidationError)(nil); !errors.As(err, &ve) || ve.Field != field {
		t.Errorf("ResumeRef(bad %s) = %v, want a ValidationError on %s", field, err, field)
	}
}
