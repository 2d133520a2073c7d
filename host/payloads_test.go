package host_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
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
	orphan := sortie.NewRunID(time.Now().Add(-2 * time.Hour))
	dir := filepath.Join(h.StateDir(), host.PayloadDir, "runs", string(orphan))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "variables"), []byte("sealed"), 0o600); err != nil {
		t.Fatal(err)
	}
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
