package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/local"
)

// startAndExitEnv makes the test binary a launching process that starts
// one attempt and exits at once, as `sortie submit` does.
const startAndExitEnv = "LOCAL_TEST_START_AND_EXIT"

// startAndExit starts the invocation in the file $LOCAL_TEST_START_AND_EXIT with a
// worker that reads its stdin only after a pause, into $OUT, then exits
// before the worker read anything.
func startAndExit() int {
	var inv sortie.Invocation
	b, err := os.ReadFile(os.Getenv(startAndExitEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.Unmarshal(b, &inv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := local.New(&local.Options{Command: []string{"/bin/sh", "-c", "sleep 0.3; cat > \"$OUT\".tmp; mv \"$OUT\".tmp \"$OUT\""},
		Env: []string{"OUT=" + os.Getenv("OUT"), "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := l.Start(context.Background(), &inv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// The worker gets the whole invocation even when the process that started
// it exits right after Start. The invocation is larger than a pipe's
// buffer, so a copy fed by the launching process would be cut short.
func TestStdinSurvivesTheLauncherExiting(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	inv := &sortie.Invocation{
		Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(`{"text":"` + big + `"}`), DeadlineMs: time.Now().Add(time.Hour).UnixMilli(),
		HeartbeatMs: 200, LeaseMs: 600, Report: sortie.Report{Mode: sortie.ReportControlPlane},
	}
	b, _ := json.Marshal(inv)
	dir := t.TempDir()
	out, in := filepath.Join(dir, "stdin"), filepath.Join(dir, "invocation.json")
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), startAndExitEnv+"="+in, "OUT="+out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("launching process: %v\n%s", err, msg)
	}
	var got []byte
	waitFor(t, "the worker to write what it read on stdin", func() bool {
		got, _ = os.ReadFile(out)
		return got != nil
	})
	read, err := sortie.DecodeInvocation(got[:len(got)-1])
	if err != nil {
		t.Fatalf("worker stdin (%d bytes, %.120q...): %v; want the whole invocation", len(got), got, err)
	}
	if diff := cmp.Diff(inv, read); diff != "" {
		t.Errorf("invocation the worker read after its launcher exited (-sent +read):\n%s", diff)
	}
}
