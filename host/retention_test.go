package host_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
)

// runObjects returns the objects under the run's payload directory
// (fileblob's .attrs files left out).
func runObjects(t *testing.T, h *host.Host, id sortie.RunID) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(h.StateDir(), host.PayloadDir, "runs", string(id)), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".attrs") {
			files = append(files, filepath.Base(p))
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}

// bigRun runs the probe with a 5 MB variable it returns as its result
// (both kept by reference) and returns the completed run.
func bigRun(t *testing.T, h *host.Host) *sortie.Run {
	t.Helper()
	vars, _ := json.Marshal(map[string]string{"output": strings.Repeat("retention ", 512<<10)})
	run := probe(t, h.Client(), string(vars))
	run = wait(t, h.Client(), run.ID)
	if run.State != sortie.StateCompleted || run.VariablesRef == nil || run.ResultRef == nil {
		t.Fatalf("probe run of %d bytes = %s, variables_ref %v, result_ref %v; want completed with both by reference",
			len(vars), run.State, run.VariablesRef, run.ResultRef)
	}
	if got := runObjects(t, h, run.ID); len(got) != 2 {
		t.Fatalf("objects of run %s = %q, want its variables and result", run.ID, got)
	}
	return run
}

// Under Config.Retention, ExpireRuns (what the reconciler runs every
// minute) deletes a run last updated before the retention with its two
// 5 MB objects, and keeps a later run and its objects.
func TestRetentionExpiresOldRunsWithTheirObjects(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, Retention: time.Hour})
	old := bigRun(t, h)
	recent := bigRun(t, h)
	if recent.UpdatedMs <= old.UpdatedMs {
		t.Fatalf("the second run ended at %d, not after the first (%d)", recent.UpdatedMs, old.UpdatedMs)
	}
	now := time.UnixMilli(old.UpdatedMs + 1).Add(time.Hour) // the old run is 1 ms past the retention
	n, err := h.ExpireRuns(t.Context(), now)
	if err != nil || n != 1 {
		t.Fatalf("ExpireRuns = %d, %v; want 1 run deleted", n, err)
	}
	if _, err := h.Client().Get(t.Context(), old.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(expired run) = %v, want ErrNotFound", err)
	}
	if got := runObjects(t, h, old.ID); len(got) != 0 {
		t.Errorf("objects of the expired run left: %q", got)
	}
	got, err := h.Client().Get(t.Context(), recent.ID)
	if err != nil || len(got.Result) < 5<<20 {
		t.Fatalf("Get(recent run) = %d bytes of result, %v; want it kept with its 5 MB result", len(got.Result), err)
	}
	if objs := runObjects(t, h, recent.ID); len(objs) != 2 {
		t.Errorf("objects of the recent run = %q, want both kept", objs)
	}
	if n, err := h.ExpireRuns(t.Context(), now); err != nil || n != 0 {
		t.Errorf("ExpireRuns again = %d, %v; want nothing left to delete", n, err)
	}
}

// Without a retention runs are kept forever; a retention under a minute
// is refused naming the field.
func TestRetentionDefaultKeepsRuns(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	run := wait(t, h.Client(), probe(t, h.Client(), `{"events": 0}`).ID)
	if n, err := h.ExpireRuns(t.Context(), time.Now().Add(24*365*time.Hour)); err != nil || n != 0 {
		t.Fatalf("ExpireRuns without a retention = %d, %v; want 0", n, err)
	}
	if _, err := h.Client().Get(t.Context(), run.ID); err != nil {
		t.Errorf("Get(%s) = %v, want the run kept", run.ID, err)
	}
	cfg := host.Config{StateDir: t.TempDir(), Retention: time.Second}
	var ve *sortie.ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) || ve.Field != "Retention" {
		t.Errorf("Validate(Retention 1s) = %v, want a ValidationError naming Retention", err)
	}
}

// logsOf returns the attempt logs of run in the host's log directory.
func logsOf(t *testing.T, h *host.Host, id sortie.RunID) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(h.StateDir(), host.LogDir, string(id)+"-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// crashedOnce runs the probe with 1 MB of variables (kept by reference)
// on warm workers, crashing its first attempt, whose worker logs the
// crash to RUN-1.log, and returns the run completed on attempt 2.
func crashedOnce(t *testing.T, h *host.Host) *sortie.Run {
	t.Helper()
	vars, _ := json.Marshal(map[string]any{"output": strings.Repeat("retention ", 100<<10), "crash_attempts": 1})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars, Policy: sortie.Policy{BackoffMs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if run = wait(t, h.Client(), run.ID); run.State != sortie.StateCompleted || run.Attempt != 2 {
		t.Fatalf("run = %s on attempt %d (%s), want completed on attempt 2", run.State, run.Attempt, run.Reason)
	}
	if logs := logsOf(t, h, run.ID); len(logs) == 0 {
		t.Fatalf("no log of run %s in %s, want its crashed attempt's", run.ID, host.LogDir)
	}
	return run
}

// Expiring a run on warm workers deletes its attempts' logs (which hold
// its events in clear text) and its payload directory, and keeps those of
// a later run.
func TestRetentionDeletesLogsAndPayloadDirectory(t *testing.T) {
	h := warmHost(t, host.Config{Retention: time.Hour, ReconcileInterval: 20 * time.Millisecond})
	go h.RunReconciler(t.Context()) // retries the crashed attempts
	old, recent := crashedOnce(t, h), crashedOnce(t, h)
	// Files only named like the old run's logs are not its logs.
	decoys := []string{string(old.ID) + "-1.log.old", string(old.ID) + "-x.log"}
	for _, d := range decoys {
		if err := os.WriteFile(filepath.Join(h.StateDir(), host.LogDir, d), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.ExpireRuns(t.Context(), time.UnixMilli(old.UpdatedMs+1).Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("ExpireRuns = %d, %v; want the old run deleted", n, err)
	}
	if logs := logsOf(t, h, old.ID); len(logs) != 1 || filepath.Base(logs[0]) != decoys[1] {
		t.Errorf("logs of the expired run left: %q, want only the decoy %s", logs, decoys[1])
	}
	if _, err := os.Stat(filepath.Join(h.StateDir(), host.LogDir, decoys[0])); err != nil {
		t.Errorf("Stat(decoy %s) = %v, want it kept", decoys[0], err)
	}
	dir := filepath.Join(h.StateDir(), host.PayloadDir, "runs", string(old.ID))
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(the expired run's payload directory) = %v, want it removed", err)
	}
	if logs := logsOf(t, h, recent.ID); len(logs) == 0 {
		t.Errorf("the recent run's logs were deleted, want them kept")
	}
	if objs := runObjects(t, h, recent.ID); len(objs) == 0 {
		t.Errorf("the recent run's objects were deleted, want them kept")
	}
}
