package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

// envScript prints the worker's environment, a marker, then its stdin, all
// to stderr, and one line to stdout.
const envScript = `/usr/bin/env >&2; echo STDIN >&2; /bin/cat >&2; echo '{"result":{"output":1}}'`

// shellOwnEnv are the variables dash sets by itself.
var shellOwnEnv = []string{"OLDPWD", "PWD", "SHLVL", "_"}

// envKeys returns the names of the variables a log of envScript lists.
func envKeys(t *testing.T, log string) []string {
	t.Helper()
	head, _, ok := strings.Cut(log, "STDIN\n")
	if !ok {
		t.Fatalf("log has no STDIN marker:\n%s", log)
	}
	var keys []string
	for line := range strings.Lines(head) {
		k, _, _ := strings.Cut(line, "=")
		if !slices.Contains(shellOwnEnv, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func TestWorkerEnvironmentIsAllowlist(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "host-secret-9f8e7d")
	t.Setenv("TZ", "UTC")
	var want []string
	for _, k := range defaultEnv {
		if _, ok := os.LookupEnv(k); ok {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	l := shellLauncher(t, envScript, nil)
	inv := testInvocation(t)
	ref := start(t, l, inv)
	if st := waitEnded(t, l, ref); st.Phase != sortie.PhaseSucceeded {
		t.Fatalf("Describe(env worker) = %+v, want succeeded", st)
	}
	log := readLog(t, ref)
	if diff := cmp.Diff(want, envKeys(t, log)); diff != "" {
		t.Errorf("worker environment keys (-want +got):\n%s", diff)
	}
	if strings.Contains(log, "host-secret-9f8e7d") {
		t.Errorf("worker log holds the host's AWS_SECRET_ACCESS_KEY value:\n%s", log)
	}
	if !strings.Contains(log, "PATH="+os.Getenv("PATH")+"\n") {
		t.Errorf("worker log lacks the host PATH:\n%s", log)
	}
	checkStdin(t, log, inv)
	if !strings.Contains(log, `{"result":{"output":1}}`) {
		t.Errorf("worker log lacks the worker's stdout line:\n%s", log)
	}
}

// checkStdin checks that the worker read exactly the invocation and a
// newline on its stdin.
func checkStdin(t *testing.T, log string, inv *sortie.Invocation) {
	t.Helper()
	_, rest, _ := strings.Cut(log, "STDIN\n")
	line, _, ok := strings.Cut(rest, "\n")
	if !ok {
		t.Fatalf("worker stdin was not one line ending in a newline: %q", rest)
	}
	got, err := sortie.DecodeInvocation([]byte(line))
	if err != nil {
		t.Fatalf("DecodeInvocation(worker stdin) = %v, want nil", err)
	}
	if diff := cmp.Diff(inv, got); diff != "" {
		t.Errorf("invocation on the worker's stdin (-sent +read):\n%s", diff)
	}
}

func TestWorkerEnvironmentExplicit(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "host-secret-9f8e7d")
	for _, tc := range []struct {
		env, want []string
	}{
		{[]string{"SORTIE_STATE_DIR=/tmp/x", "ONLY=1"}, []string{"ONLY", "SORTIE_STATE_DIR"}},
		{[]string{}, nil},
	} {
		l := shellLauncher(t, envScript, &Options{Env: tc.env})
		ref := start(t, l, testInvocation(t))
		waitEnded(t, l, ref)
		if diff := cmp.Diff(tc.want, envKeys(t, readLog(t, ref))); diff != "" {
			t.Errorf("worker environment keys with Options.Env %q (-want +got):\n%s", tc.env, diff)
		}
	}
}

func TestStartRef(t *testing.T) {
	l := shellLauncher(t, `echo started >&2; exec /bin/sleep 600`, nil)
	inv := testInvocation(t)
	ref := start(t, l, inv)
	pid, err := strconv.Atoi(ref.ID)
	if err != nil {
		t.Fatalf("Start().ID = %q, want a pid", ref.ID)
	}
	st, err := readStat(pid)
	if err != nil {
		t.Fatalf("readStat(%d) = %v, want the live worker", pid, err)
	}
	want := sortie.Ref{Provider: "local", Resource: "sh", ID: ref.ID, RunID: inv.RunID, Attempt: 1, LaunchID: inv.LaunchID,
		Detail: map[string]string{
			DetailStartTime: st.startTime,
			DetailLog:       filepath.Join(l.opts.LogDir, string(inv.RunID)+"-1.log"),
		}}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Errorf("Start() ref (-want +got):\n%s", diff)
	}
	if st.pgrp != pid {
		t.Errorf("worker process group = %d, want its own (%d)", st.pgrp, pid)
	}
	again := start(t, l, inv)
	if diff := cmp.Diff(ref, again); diff != "" {
		t.Errorf("second Start(same launch ID) ref (-first +second):\n%s", diff)
	}
	waitLog(t, ref, "started")
	if err := l.Cancel(t.Context(), ref); err != nil {
		t.Fatalf("Cancel() = %v, want nil", err)
	}
	if n := strings.Count(readLog(t, ref), "started"); n != 1 {
		t.Errorf("worker processes started for one launch ID = %d, want 1", n)
	}
	if again := start(t, l, inv); again.ID != ref.ID {
		t.Errorf("Start(same launch ID) after the worker ended = pid %s, want the remembered pid %s", again.ID, ref.ID)
	}
}

func TestStartRefusesOversizeInvocation(t *testing.T) {
	l := shellLauncher(t, `exit 0`, nil)
	inv := testInvocation(t)
	// 200 KB of '<' passes Validate (256 KB) but JSON-escapes to 1.2 MB.
	inv.Variables = []byte(`{"text":"` + strings.Repeat("<", 200<<10) + `"}`)
	_, err := l.Start(t.Context(), inv)
	if !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Fatalf("Start(oversize invocation) = %v, want ErrInvalidArgument", err)
	}
	if limit := strconv.Itoa(sortie.MaxInvocationBytes); !strings.Contains(err.Error(), limit) || !strings.Contains(err.Error(), "MaxInvocationBytes") {
		t.Errorf("Start(oversize invocation) = %q, want the limit MaxInvocationBytes (%s) named", err, limit)
	}
	if ents, _ := os.ReadDir(l.opts.LogDir); len(ents) != 0 {
		t.Errorf("Start(oversize invocation) left %d log files, want none (no worker started)", len(ents))
	}
}

func TestStartRefusesInvalidInvocation(t *testing.T) {
	l := shellLauncher(t, `exit 0`, nil)
	inv := testInvocation(t)
	inv.Attempt = 0
	_, err := l.Start(t.Context(), inv)
	var verr *sortie.ValidationError
	if !errors.As(err, &verr) || verr.Field != "attempt" {
		t.Fatalf("Start(attempt 0) = %v, want a ValidationError for field attempt", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	run := func(context.Context, *sortie.Invocation) error { return nil }
	for _, tc := range []struct {
		name string
		opts *Options
	}{
		{"nil", nil},
		{"no command", &Options{}},
		{"empty command", &Options{Command: []string{""}}},
		{"missing command", &Options{Command: []string{"/nonexistent/sortie-worker"}}},
		{"both modes", &Options{Command: []string{"/bin/sh"}, InProcess: run}},
	} {
		_, err := New(tc.opts)
		var verr *sortie.ValidationError
		if !errors.As(err, &verr) || verr.Field != "command" {
			t.Errorf("New(%s) = %v, want a ValidationError for field command", tc.name, err)
		}
	}
}

func TestDescribeExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   sortie.Status
	}{
		{`exit 0`, sortie.Status{Phase: sortie.PhaseSucceeded, ExitCode: intPtr(0)}},
		{`exit 3`, sortie.Status{Phase: sortie.PhaseFailed, ExitCode: intPtr(3), Reason: "worker exit status 3"}},
		{`kill -KILL $$`, sortie.Status{Phase: sortie.PhaseFailed, ExitCode: intPtr(-1), Reason: "worker signal: killed", Signal: "SIGKILL"}},
	} {
		l := shellLauncher(t, tc.script, nil)
		ref := start(t, l, testInvocation(t))
		tc.want.LogURL = ref.Detail[DetailLog]
		if diff := cmp.Diff(tc.want, waitEnded(t, l, ref)); diff != "" {
			t.Errorf("Describe(worker %q) (-want +got):\n%s", tc.script, diff)
		}
		// Another launcher (another process) sees a reaped worker as gone.
		other := shellLauncher(t, `exit 0`, nil)
		if st, err := other.Describe(t.Context(), ref); err != nil || st.Phase != sortie.PhaseNotFound {
			t.Errorf("other launcher Describe(reaped worker %q) = %+v, %v, want not-found", tc.script, st, err)
		}
	}
}

func TestCloseRefusesStart(t *testing.T) {
	l := shellLauncher(t, `exit 0`, nil)
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	if _, err := l.Start(t.Context(), testInvocation(t)); !errors.Is(err, sortie.ErrClosed) {
		t.Errorf("Start() after Close = %v, want ErrClosed", err)
	}
}
