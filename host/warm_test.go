package host_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
)

// warmHost is a host in the default mode: attempts on warm workers of the
// built sortie binary.
func warmHost(t *testing.T, cfg host.Config) *host.Host {
	t.Helper()
	cfg.StateDir, cfg.WorkerCommand = t.TempDir(), []string{sortieBin, "worker"}
	return newHost(t, cfg)
}

func TestWarmWorkersRunAttemptsWithTheirOwnConfiguration(t *testing.T) {
	h := warmHost(t, host.Config{ConfigEnv: []string{"API_TOKEN", "REGION"}, WorkerPoolSize: 2})
	for _, config := range []string{`{"API_TOKEN":"` + secretValue + `"}`, `{"REGION":"eu-west-3"}`, ``} {
		run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe",
			Variables: json.RawMessage(`{"events":2,"config_names":true}`), Config: json.RawMessage(config)})
		if err != nil {
			t.Fatalf("Submit(config %s) = %v", config, err)
		}
		run = wait(t, h.Client(), run.ID)
		var got struct {
			Names []string `json:"config_names"`
		}
		if run.State != sortie.StateCompleted || json.Unmarshal(run.Result, &got) != nil {
			t.Fatalf("run with config %s = %s %s, want completed", config, run.State, run.Reason)
		}
		var want []string
		if config != "" {
			var m map[string]string
			json.Unmarshal([]byte(config), &m)
			for k := range m {
				want = append(want, k)
			}
		}
		if strings.Join(got.Names, ",") != strings.Join(want, ",") {
			t.Errorf("config names the warm worker's handler saw = %q, want %q (this attempt's only)", got.Names, want)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(h.StateDir(), host.LogDir, "*.log"))
	for _, f := range logs {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), secretValue) {
			t.Errorf("%s holds a configuration value", filepath.Base(f))
		}
	}
}

func TestWarmWorkersLogEachAttemptToItsFile(t *testing.T) {
	h := warmHost(t, host.Config{ReconcileInterval: 20 * time.Millisecond})
	go h.RunReconciler(t.Context()) // retries the crashed attempt
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":1,"crash_attempts":1,"output":"logged"}`), Policy: sortie.Policy{BackoffMs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if run = wait(t, h.Client(), run.ID); run.State != sortie.StateCompleted || run.Attempt != 2 {
		t.Fatalf("run = %s on attempt %d (%s), want completed on attempt 2", run.State, run.Attempt, run.Reason)
	}
	logs := filepath.Join(h.StateDir(), host.LogDir)
	b, err := os.ReadFile(filepath.Join(logs, run.ID.String()+"-1.log"))
	if err != nil || !strings.Contains(string(b), "probe: simulating a crash") || !strings.Contains(string(b), "stream=stderr") {
		t.Errorf("log of the crashed attempt = %q, %v; want the warm worker's stderr line", b, err)
	}
	if _, err := os.Stat(filepath.Join(logs, run.ID.String()+"-2.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat the log of attempt 2, which logged nothing = %v, want no file", err)
	}
}
