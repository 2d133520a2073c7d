package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/sortie-run/sortie/launchers/local"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host/builtin"
)

const secretValue = "cli-canary-93b2-not-for-logs"

func inlineGlobals(t *testing.T, allow ...string) *globals {
	t.Helper()
	return &globals{stateDir: t.TempDir(), logLevel: "warn", inProcess: true, reconcile: time.Second, configEnv: allow}
}

func submitConfig(t *testing.T, h *host, config string) (*sortie.Run, error) {
	t.Helper()
	return h.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":1}`), Config: json.RawMessage(config)})
}

func TestInlineConfigIsOffByDefault(t *testing.T) {
	g := inlineGlobals(t)
	h, err := g.openHost()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = submitConfig(t, h, `{"API_TOKEN":"`+secretValue+`"}`)
	if !errors.Is(err, sortie.ErrInvalidArgument) || !strings.Contains(err.Error(), "off") {
		t.Errorf("Submit(config) without --config-env = %v, want an invalid-argument error saying it is off", err)
	}
	if _, err := os.Stat(filepath.Join(g.stateDir, localKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat %s = %v, want no key file while inline configuration is off", localKeyFile, err)
	}
}

// With --config-env the embedded host seals with a local key file (mode
// 0600) in the state directory, the in-process worker opens it, and the
// SQLite files never hold the value.
func TestInlineConfigOnTheEmbeddedHost(t *testing.T) {
	g := inlineGlobals(t, "API_TOKEN")
	h, err := g.openHost()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ok, err := submitConfig(t, h, `{"API_TOKEN":"`+secretValue+`"}`)
	if err != nil {
		t.Fatalf("Submit(config) = %v", err)
	}
	denied, err := submitConfig(t, h, `{"OTHER":"`+secretValue+`"}`)
	if err != nil {
		t.Fatalf("Submit(config) = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if run, err := h.client.Wait(ctx, ok.ID); err != nil || run.State != sortie.StateCompleted {
		t.Fatalf("Wait(%s) = %+v, %v; want completed", ok.ID, run, err)
	}
	run, err := h.client.Wait(ctx, denied.ID)
	if err != nil || run.State != sortie.StateRejected || !strings.Contains(run.Reason, "OTHER") {
		t.Fatalf("Wait(%s) = %+v, %v; want rejected naming OTHER", denied.ID, run, err)
	}
	st, err := os.Stat(filepath.Join(g.stateDir, localKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %s = %v, %v; want mode 0600", localKeyFile, st, err)
	}
	files, _ := filepath.Glob(filepath.Join(g.stateDir, "sortie.db*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s contains the configuration value", filepath.Base(f))
		}
	}
}

// `sortie worker` opens an invocation's configuration with the state
// directory's key when SORTIE_CONFIG_ENV allows it, and rejects it
// otherwise.
func TestWorkerSubprocessOpensConfig(t *testing.T) {
	g := inlineGlobals(t, "API_TOKEN")
	dir, err := g.absStateDir()
	if err != nil {
		t.Fatal(err)
	}
	inv := sealedInvocation(t, g, dir)
	for _, tc := range []struct {
		env, want string
	}{
		{"SORTIE_CONFIG_ENV=API_TOKEN", `"result"`},
		{"SORTIE_CONFIG_ENV=", "inline configuration, which is off"},
	} {
		cmd := exec.Command(sortieBin, "--state-dir", dir, "worker", "--report", "stdout")
		cmd.Env = append(local.DefaultEnv(), tc.env)
		cmd.Stdin = bytes.NewReader(append(inv, '\n'))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("sortie worker with %s printed %q (stderr %q), want %s", tc.env, out.String(), errb.String(), tc.want)
		}
		if strings.Contains(out.String()+errb.String(), secretValue) {
			t.Errorf("sortie worker with %s printed the configuration value", tc.env)
		}
	}
}

// sealedInvocation seals a configuration for attempt 1 of a probe run, as
// the embedded host's engine does, and returns the invocation's JSON.
func sealedInvocation(t *testing.T, g *globals, dir string) []byte {
	t.Helper()
	s, err := g.sealer(dir)
	if err != nil {
		t.Fatal(err)
	}
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: builtin.Agents()["probe"]}
	cs := s.(sortie.ConfigSealer)
	atRest, err := cs.SealConfig(context.Background(), run, json.RawMessage(`{"API_TOKEN":"`+secretValue+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(),
		Agent: run.Agent, Variables: json.RawMessage(`{"events":0}`), SealedConfig: atRest,
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 1000, LeaseMs: 3000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	if err := s.Seal(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
