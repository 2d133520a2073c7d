package controlplanetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// refStep returns a completed step of attempt kept by reference: a
// 500 KB value whose sealed object's SHA-256 is 64 times digit.
func refStep(id sortie.RunID, name string, attempt int, digit string) sortie.Step {
	st := step(name, attempt, ``)
	st.Result = nil
	st.ResultRef = &sortie.PayloadRef{Store: "file", Key: "runs/" + string(id) + "/" + sortie.StepPayloadName(name, attempt),
		Size: 500 << 10, SHA256: strings.Repeat(digit, 64)}
	return st
}

// testStepByReference records steps kept by reference (one secret, with
// no sealed result): they read back with their references; the same
// content again (another key, the same size and SHA-256) is a no-op,
// other content ErrConflict; and a reference counts its own bytes
// against sortie.MaxStepsBytes, not its value's: a run holding 15 steps
// of sortie.MaxStepResultBytes takes one, and then refuses a 16th inline
// one it would have taken without it.
func testStepByReference(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a := refStep(run.ID, "big", 1, "a")
	secret := refStep(run.ID, "secret-big", 1, "b")
	secret.Secret, secret.StartedMs = true, a.StartedMs+1
	f.recordStep(run.ID, lid, a, T0+10)
	f.recordStep(run.ID, lid, secret, T0+11)
	moved := a.Clone()
	moved.ResultRef.Store, moved.ResultRef.Key = "s3://elsewhere", "runs/"+string(run.ID)+"/step-moved-1"
	if got := f.recordStep(run.ID, lid, moved, T0+20); got.ResultRef == nil || got.ResultRef.Key != a.ResultRef.Key || got.RecordedMs != T0+10 {
		t.Errorf("RecordStep(big) again with the same content elsewhere = %+v, want the step recorded first", got)
	}
	other := refStep(run.ID, "big", 1, "c")
	_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, other, T0+20))
	wantErr(t, "RecordStep(big) with another SHA-256", err, sortie.ErrConflict)
	f.wantSteps("steps by reference", run.ID, stored(a, T0+10), stored(secret, T0+11))

	full, lid2 := f.working(T0 + 100)
	big := `"` + strings.Repeat("b", sortie.MaxStepResultBytes-2) + `"`
	n := sortie.MaxStepsBytes/sortie.MaxStepResultBytes - 1
	for i := range n {
		st := step(fmt.Sprintf("big-%02d", i), 1, big)
		st.StartedMs += int64(i)
		f.recordStep(full.ID, lid2, st, T0+110)
	}
	f.recordStep(full.ID, lid2, refStep(full.ID, "by-ref", 1, "d"), T0+120)
	_, err = f.cp.RecordStep(f.ctx, stepRecord(full.ID, lid2, step("one-more", 1, big), T0+130))
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "steps" {
		t.Errorf("RecordStep(%d bytes) after %d bytes of results and a reference = %v, want a *sortie.ValidationError naming steps", len(big), n*len(big), err)
	}
	if got := f.steps(full.ID); len(got) != n+1 {
		t.Errorf("Steps holds %d steps, want %d", len(got), n+1)
	}
}
