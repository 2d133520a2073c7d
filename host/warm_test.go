package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, config := range []string{`{"API_TOKEN":"` + secretValue + `"}`, `{"REGION":"eu"}`, ``} {
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
	h := warmHost(t, host.Config{})
	run := wait(t, h.Client(), probe(t, h.Client(), `{"events":1,"output":"logged"}`).ID)
	if run.State != sortie.StateCompleted {
		t.Fatalf("run = %s %s, want completed", run.State, run.Reason)
	}
	b, err := os.ReadFile(filepath.Join(h.StateDir(), host.LogDir, run.ID.String()+"-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"event":{`, `{"result":{"output":"logged"}}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("attempt log = %q, want it to hold %s", b, want)
		}
	}
}
