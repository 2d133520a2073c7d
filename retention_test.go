package sortie_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/internal/metrictest"
	"github.com/sortie-run/sortie/payload"
)

// endedRun stores a run of agent probe that completed at endMs.
func endedRun(t *testing.T, cp sortie.ControlPlane, endMs int64) sortie.RunID {
	t.Helper()
	ctx := t.Context()
	run := controlplanetest.NewRun(endMs - 10)
	run.Policy.MaxAttempts = 1
	lid := sortie.NewLaunchID()
	_, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: endMs - 10, LaunchID: lid})
	if err == nil {
		_, err = cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: endMs - 5})
	}
	if err == nil {
		_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
			Outcome: sortie.Outcome{Result: json.RawMessage(`1`)}, NowMs: endMs})
	}
	if err != nil {
		t.Fatalf("store a run ended at %d: %v", endMs, err)
	}
	return run.ID
}

// endedWithObject is endedRun with a variables object of the run in
// store.
func endedWithObject(t *testing.T, cp sortie.ControlPlane, store sortie.PayloadStore, endMs int64) sortie.RunID {
	t.Helper()
	id := endedRun(t, cp, endMs)
	if _, err := store.Put(t.Context(), id, "probe", "variables", "variables", []byte(`{"big":true}`)); err != nil {
		t.Fatalf("store an object of run %s: %v", id, err)
	}
	return id
}

// Engine.Delete deletes the run, then its objects; Engine.Expire deletes
// the runs ended before its time with theirs, within its limit, and
// keeps the later one; each deletion is counted by reason. When the
// objects cannot be deleted (the bucket is gone), Delete still deletes
// the run and leaves the objects to the payload sweep.
func TestDeleteAndExpireWithObjects(t *testing.T) {
	r := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)))
	dir := t.TempDir()
	store, bucket, err := payload.OpenFile(dir, envelopetest.Config(t, "local-1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := memory.New()
	e := sortie.NewEngine(cp, nil, probeAgent, &sortie.EngineOptions{Payloads: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { e.Close(); cp.Close(); bucket.Close() })
	objects := func(id sortie.RunID) int {
		entries, _ := os.ReadDir(filepath.Join(dir, "runs", string(id)))
		return len(entries)
	}
	t0 := controlplanetest.T0
	deleted := endedWithObject(t, cp, store, t0)
	old1, old2 := endedWithObject(t, cp, store, t0+100), endedWithObject(t, cp, store, t0+200)
	recent := endedWithObject(t, cp, store, t0+10_000)

	if err := e.Delete(t.Context(), deleted); err != nil || objects(deleted) != 0 {
		t.Fatalf("Delete = %v, %d objects left; want nil and none", err, objects(deleted))
	}
	if n, err := e.Expire(t.Context(), time.UnixMilli(t0+5000), 1); err != nil || n != 1 || objects(old1) != 0 || objects(old2) == 0 {
		t.Fatalf("Expire(limit 1) = %d, %v (objects: oldest %d, next %d); want the oldest run and its object gone, the next kept",
			n, err, objects(old1), objects(old2))
	}
	if n, err := e.ExpireAll(t.Context(), time.UnixMilli(t0+5000)); err != nil || n != 1 || objects(old2) != 0 {
		t.Fatalf("ExpireAll = %d, %v; want the other old run deleted", n, err)
	}
	if _, err := e.Get(t.Context(), recent); err != nil || objects(recent) == 0 {
		t.Fatalf("Get(recent run) = %v with %d objects, want it kept with its object", err, objects(recent))
	}
	got := map[string]int64{}
	for k, v := range metrictest.Sums(t, r, "sortie.deletion.reason") {
		if strings.HasPrefix(k, sortie.MetricRunsDeleted) {
			got[k] = v
		}
	}
	want := map[string]int64{sortie.MetricRunsDeleted + " request": 1, sortie.MetricRunsDeleted + " retention": 2}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deletion counts (-want +got):\n%s", d)
	}

	bucket.Close()
	if err := e.Delete(t.Context(), recent); err != nil {
		t.Fatalf("Delete with the bucket closed = %v, want nil (the objects are left to the sweep)", err)
	}
	if _, err := e.Get(t.Context(), recent); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if objects(recent) == 0 {
		t.Errorf("the objects went with the bucket closed; want them left for the sweep")
	}
}
