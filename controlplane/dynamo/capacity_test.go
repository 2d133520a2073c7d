package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

const T0 = controlplanetest.T0

// lifecycle takes one run through what the engine and a worker do: Reserve
// with attempt 1's launch (with an idempotency key when keyed), SetRef,
// Claim, the events (in one AppendEvents, or one call each when single)
// and Finish, all at nowMs.
func lifecycle(ctx context.Context, cp sortie.ControlPlane, nowMs int64, events int, keyed, single bool) (*sortie.Run, error) {
	run := controlplanetest.NewRun(nowMs)
	if keyed {
		run.IdempotencyKey, run.RequestHash = "key-"+string(run.ID), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	}
	lid := sortie.NewLaunchID()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: nowMs, LaunchID: lid})
	if err != nil {
		return nil, fmt.Errorf("Reserve: %w", err)
	}
	if _, err := cp.SetRef(ctx, run.ID, 1, lid, sortie.Ref{Provider: "lambda", Resource: "probe", ID: "req-1", RunID: run.ID, Attempt: 1, LaunchID: lid}); err != nil {
		return nil, fmt.Errorf("SetRef: %w", err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "bench", NowMs: nowMs}); err != nil {
		return nil, fmt.Errorf("Claim: %w", err)
	}
	evs := make([]sortie.Event, events)
	for i := range evs {
		evs[i] = sortie.Event{Kind: "progress", Text: fmt.Sprintf("step %d of %d", i+1, events), TimeMs: nowMs}
	}
	for len(evs) > 0 {
		n := len(evs)
		if single {
			n = 1
		}
		if _, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: evs[:n], NowMs: nowMs}); err != nil {
			return nil, fmt.Errorf("AppendEvents: %w", err)
		}
		evs = evs[n:]
	}
	return cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`), Usage: &sortie.Usage{DurationMs: 12}}, NowMs: nowMs})
}

func TestCapacityRecordedOnTheAttempt(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	if _, err := lifecycle(ctx, cp, T0, 1, true, false); err != nil { // registers the agent, once per handle
		t.Fatalf("lifecycle = %v, want success", err)
	}
	before := cp.Consumed()
	run, err := lifecycle(ctx, cp, T0+1, 10, true, false)
	if err != nil {
		t.Fatalf("lifecycle = %v, want success", err)
	}
	u := run.Current().Usage
	got := cp.Consumed()
	got.Capacity = got.Capacity.Minus(before.Capacity)
	t.Logf("recorded %+v, reported %+v", *u, got)
	if u == nil || u.WriteUnits <= 0 || u.ReadUnits <= 0 || u.DurationMs != 12 {
		t.Fatalf("Finish: attempt 1 usage = %+v, want read and write units > 0 and the worker's duration 12 ms", u)
	}
	if u.WriteUnits != got.WriteUnits {
		t.Errorf("attempt 1 WriteUnits = %v, want %v (what DynamoDB reported for the run's calls)", u.WriteUnits, got.WriteUnits)
	}
	if u.ReadUnits != got.ReadUnits {
		t.Errorf("attempt 1 ReadUnits = %v, want %v (what DynamoDB reported for the run's calls)", u.ReadUnits, got.ReadUnits)
	}
	_ = dynamo.Capacity{}
}

// A claim that states the worker's compute shape stores it in the claim's
// one conditional write: it makes as many DynamoDB calls as a claim
// without one, and the shape is on the stored attempt.
func TestClaimShapeInTheClaimsWrite(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	claim := func(shape *sortie.Usage) (dynamo.Consumed, *sortie.Run) {
		t.Helper()
		lid := sortie.NewLaunchID()
		run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(T0), NowMs: T0, LaunchID: lid})
		if err != nil {
			t.Fatalf("Reserve = %v, want success", err)
		}
		before := cp.Consumed()
		claimed, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "w", Usage: shape, NowMs: T0 + 1})
		if err != nil {
			t.Fatalf("Claim(shape %+v) = %v, want success", shape, err)
		}
		got := cp.Consumed()
		got.Requests, got.IndexWriteUnits = got.Requests-before.Requests, got.IndexWriteUnits-before.IndexWriteUnits
		got.Capacity = got.Capacity.Minus(before.Capacity)
		return got, claimed
	}
	claim(nil) // registers the agent, once per handle
	plain, _ := claim(nil)
	shaped, run := claim(&sortie.Usage{MemoryMB: 128, Arch: "arm64"})
	t.Logf("claim without a shape %+v, with one %+v", plain, shaped)
	if shaped.Requests != plain.Requests || shaped.WriteUnits != plain.WriteUnits {
		t.Errorf("claim with a shape: %d requests, %v write units; want those of a claim without one: %d, %v",
			shaped.Requests, shaped.WriteUnits, plain.Requests, plain.WriteUnits)
	}
	stored, err := cp.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u := stored.Current().Usage; u == nil || u.MemoryMB != 128 || u.Arch != "arm64" {
		t.Errorf("stored attempt usage %+v, want the claim's 128 MB arm64", u)
	}
}
