package dynamo_test

import (
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// TestPushCapacity measures, with what DynamoDB Local reports through
// ReturnConsumedCapacity, the write units of each push configuration call
// on a configuration of about 150 bytes, and checks them against the
// costs the package documents. DeletePushConfig is only logged: DynamoDB
// Local reports 2 units for its transaction of a delete and an update,
// where DynamoDB bills 4 (two items, doubled).
func TestPushCapacity(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(T0), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	cfg := &sortie.PushConfig{RunID: run.ID, ID: "ops-hook", URL: "https://hooks.example.com/sortie/" + strings.Repeat("x", 40)}
	steps := []struct {
		name      string
		call      func() error
		wru, iwru float64
	}{
		{"PutPushConfig(new)", func() error { _, err := cp.PutPushConfig(ctx, cfg, T0+1); return err }, 6, 2},
		{"PutPushConfig(replace)", func() error { _, err := cp.PutPushConfig(ctx, cfg, T0+2); return err }, 1, 0},
		{"UpdatePushDelivery(delivered, same NextAttemptMs)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 1})
		}, 1, 0},
		{"UpdatePushDelivery(failed, retry later)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 1, Failures: 1, NextAttemptMs: T0 + 500, LastError: "HTTP 503"})
		}, 3, 2},
		{"UpdatePushDelivery(stale version)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{NextAttemptMs: T0 + 500})
		}, 2, 0},
		{"UpdatePushDelivery(done)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 2, NextAttemptMs: T0 + 500, Done: true})
		}, 2, 1},
		{"DeletePushConfig(done)", func() error { return cp.DeletePushConfig(ctx, run.ID, cfg.ID) }, -1, -1},
	}
	for _, s := range steps {
		before := cp.Consumed()
		if err := s.call(); err != nil {
			t.Fatalf("%s = %v, want success", s.name, err)
		}
		after := cp.Consumed()
		wru, iwru, rru := after.WriteUnits-before.WriteUnits, after.IndexWriteUnits-before.IndexWriteUnits, after.ReadUnits-before.ReadUnits
		t.Logf("%s: %v WRU (%v index), %v RRU, %d requests", s.name, wru, iwru, rru, after.Requests-before.Requests)
		if s.wru >= 0 && (wru != s.wru || iwru != s.iwru) {
			t.Errorf("%s consumed %v write units (%v for indexes), want %v (%v)", s.name, wru, iwru, s.wru, s.iwru)
		}
	}
}
