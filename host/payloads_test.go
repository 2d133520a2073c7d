package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/internal/testwait"
)

// An in-process host keeps variables over sortie.MaxVariablesBytes in
// StateDir/payloads, and SweepPayloads removes the objects of a run the
// control plane does not hold (here one left by a submission that never
// stored its run) but none of a run it holds.
func TestSweepPayloadsKeepsHeldRuns(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	vars, _ := json.Marshal(map[string]string{"text": string(bytes.Repeat([]byte("v"), sortie.MaxVariablesBytes))})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	if err != nil {
		t.Fatalf("Submit(%d bytes of variables) = %v", len(vars), err)
	}
	if run.VariablesRef == nil {
		t.Fatalf("Submit kept the variables inline (%d bytes), want them by reference", len(run.Variables))
	}
	dir := orphanObject(t, h, 2*time.Hour)
	n, err := h.Engine().SweepPayloads(t.Context(), 0)
	if err != nil || n != 1 {
		t.Fatalf("SweepPayloads = %d, %v; want 1 run swept", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "variables")); !os.IsNotExist(err) {
		t.Errorf("the orphan's objects are still there (%v)", err)
	}
	got, err := h.Client().Get(t.Context(), run.ID)
	if err != nil || !bytes.Equal(got.Variables, vars) {
		t.Fatalf("Get(%s) after the sweep = %d bytes of variables, %v; want the %d submitted", run.ID, len(got.Variables), err, len(vars))
	}
}

// orphanObject stores an object of a run created age ago that the control
// plane does not hold, and returns its directory.
func orphanObject(t *testing.T, h *host.Host, age time.Duration) string {
	t.Helper()
	orphan := sortie.NewRunID(time.Now().Add(-age))
	dir := filepath.Join(h.StateDir(), host.PayloadDir, "runs", string(orphan))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "variables"), []byte("sealed"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The reconciler sweeps once when it starts, not only 10 minutes later:
// the object of a run 2 hours old the control plane does not hold goes,
// that of one 10 minutes old (under the sweep's minimum age of an hour)
// stays, as do a held run's.
func TestReconcilerSweepsAtStart(t *testing.T) {
	logs := &logbuf.Buffer{}
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	vars, _ := json.Marshal(map[string]string{"text": string(bytes.Repeat([]byte("v"), sortie.MaxVariablesBytes))})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	if err != nil || run.VariablesRef == nil {
		t.Fatalf("Submit(%d bytes of variables) = %+v, %v; want them kept by reference", len(vars), run, err)
	}
	old, young := orphanObject(t, h, 2*time.Hour), orphanObject(t, h, 10*time.Minute)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); h.RunReconciler(ctx) }()
	defer func() { stop(); <-done }()
	// The pass logs when it has gone through every run, the young
	// orphan's included: only then is "kept" a result.
	testwait.UntilReport(t, "a sweep pass deleting the orphan 2 hours old", waitLong, func() (bool, string) {
		return strings.Contains(logs.String(), `msg="payload sweep: deleted the objects of runs the control plane does not hold" runs=1`), logs.String()
	})
	if _, err := os.Stat(filepath.Join(old, "variables")); !os.IsNotExist(err) {
		t.Errorf("the orphan 2 hours old is still there after the sweep (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(young, "variables")); err != nil {
		t.Errorf("the orphan 10 minutes old was swept too (%v); want it kept until it is an hour old", err)
	}
	if got, err := h.Client().Get(t.Context(), run.ID); err != nil || !bytes.Equal(got.Variables, vars) {
		t.Errorf("Get(%s) after the sweep = %v; want the held run's variables", run.ID, err)
	}
}
