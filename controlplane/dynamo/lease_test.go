package dynamo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// Lease entries of runs that ended stay in the index, and Expired passes
// them with a watermark: a later pass (another handle, another process)
// reads none of them again, and a run that waited for input and was
// resumed after its old entry was passed is found again by its new key.
func TestLeaseWatermark(t *testing.T) {
	db, table := newTable(t)
	now := T0
	clock := func() time.Time { return time.UnixMilli(now) }
	cp := open(t, db, table, &dynamo.Options{Now: clock})
	ctx := t.Context()
	asked, lid := working(t, cp)
	if _, err := cp.Finish(ctx, sortie.Finish{RunID: asked.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 5,
		Outcome: sortie.Outcome{Interrupt: &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "name?"}}}); err != nil {
		t.Fatalf("Finish(interrupt) = %v", err)
	}
	_, err := lifecycle(ctx, cp, T0+1, 2, false, false)
	if err != nil {
		t.Fatalf("lifecycle = %v", err)
	}
	later := T0 + 3_600_000
	if due, err := cp.Expired(ctx, later, 0); err != nil || len(due) != 0 {
		t.Fatalf("Expired(an hour later) = %v, %v, want nothing due (one run ended, one waits for input)", ids(due), err)
	}
	marks := rawItem(t, db, table, "CTL#lease", "CTL")
	if len(marks) < 3 {
		t.Errorf("watermark item = %v, want a watermark for each partition holding one of the two runs", marks)
	}
	for name, v := range marks {
		if w, ok := v.(*types.AttributeValueMemberN); ok && (w.Value < fmt.Sprint(T0) || w.Value > fmt.Sprint(later)) {
			t.Errorf("watermark %s = %s, want the last key passed (the runs' keys, after T0)", name, w.Value)
		}
	}
	rc := &readCounter{Client: newClient()}
	other := open(t, rc, table, nil)
	if due, err := other.Expired(ctx, later+1, 0); err != nil || len(due) != 0 || rc.take() != 0 {
		t.Errorf("another handle's Expired = %v, %v, want nothing due and no run read again (entries below the watermark)", ids(due), err)
	}
	now = later + 10
	if _, err := cp.Resume(ctx, asked.ID, []byte(`{"name":"x"}`)); err != nil {
		t.Fatalf("Resume = %v", err)
	}
	due, err := other.Expired(ctx, now, 0)
	if err != nil || !slices.Equal(ids(due), []sortie.RunID{asked.ID}) {
		t.Errorf("Expired after the resume = %v, %v, want the resumed run %s due for its next attempt", ids(due), err, asked.ID)
	}
}
