package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/launchers/local"
)

const secretValue = "cli-canary-93b2-not-for-logs"

// `sortie worker` opens an invocation's configuration with the state
// directory's key when SORTIE_CONFIG_ENV allows it, and rejects it
// otherwise.
func TestWorkerSubprocessOpensConfig(t *testing.T) {
	dir := t.TempDir()
	inv := sealedInvocation(t, dir)
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

// capture is a launcher that keeps the invocations it is handed.
type capture chan *sortie.Invocation

func (c capture) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	c <- inv
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// sealedInvocation submits a probe run with a configuration to the
// embedded host of state directory dir (inline configuration on) and
// returns the JSON of the invocation its engine launched: the
// configuration sealed for attempt 1 with dir's local key.
func sealedInvocation(t *testing.T, dir string) []byte {
	t.Helper()
	launched := make(capture, 1)
	h, err := host.New(t.Context(), host.Config{StateDir: dir, ConfigEnv: []string{"API_TOKEN"}, Launcher: launched})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":0}`),
		Config: json.RawMessage(`{"API_TOKEN":"` + secretValue + `"}`)})
	if err != nil {
		t.Fatalf("Submit with configuration = %v", err)
	}
	select {
	case inv := <-launched:
		b, err := json.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case <-time.After(waitLong):
		t.Fatal("no launch within 30 s")
		return nil
	}
}
