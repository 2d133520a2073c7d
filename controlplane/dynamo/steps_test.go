package dynamo_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// TestCapacityOfAStep measures what recording a step costs as DynamoDB
// reports it: one transaction of the run item's counter update and the
// step's put, which DynamoDB bills at two write units per KB of each (4
// for a small step and a small run; DynamoDB Local reports one a KB, 2),
// and what reading them back costs.
func TestCapacityOfAStep(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run := controlplanetest.NewRun(T0)
	lid := sortie.NewLaunchID()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0, LaunchID: lid})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "probe", NowMs: T0}); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	for _, c := range []struct{ name, result string }{
		{"small", `{"tokens":812}`},
		{"ten-kb", `"` + strings.Repeat("x", 10<<10) + `"`}, // the body is compressed: far under 1 KB
	} {
		before := cp.Consumed()
		st := sortie.Step{Name: c.name, Attempt: 1, Status: sortie.StepCompleted, Result: json.RawMessage(c.result), StartedMs: T0, DurationMs: 3, Tries: 1}
		if _, err := cp.RecordStep(ctx, sortie.StepRecord{RunID: run.ID, Attempt: 1, LaunchID: lid, Step: st, NowMs: T0 + 1}); err != nil {
			t.Fatalf("RecordStep(%s) = %v", c.name, err)
		}
		got := cp.Consumed().Capacity.Minus(before.Capacity)
		t.Logf("step %s (%d bytes of result): %v write units, %v read units", c.name, len(c.result), got.WriteUnits, got.ReadUnits)
		if (got.WriteUnits != 4 && got.WriteUnits != 2) || got.ReadUnits != 0 {
			t.Errorf("RecordStep(%s) consumed %v write and %v read units, want 4 (2 on DynamoDB Local) and 0", c.name, got.WriteUnits, got.ReadUnits)
		}
	}
	before := cp.Consumed()
	steps, err := cp.Steps(ctx, run.ID)
	if err != nil || len(steps) != 2 {
		t.Fatalf("Steps = %v, %v; want 2 steps", steps, err)
	}
	got := cp.Consumed().Capacity.Minus(before.Capacity)
	t.Logf("Steps (run item and 2 steps, one Query): %v read units", got.ReadUnits)
	if got.ReadUnits <= 0 || got.ReadUnits > 1 {
		t.Errorf("Steps consumed %v read units, want one strongly consistent read of under 4 KB (1)", got.ReadUnits)
	}
}
