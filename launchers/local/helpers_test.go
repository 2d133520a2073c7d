package local

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, 30*time.Second, cond)
}

// testInvocation returns a valid invocation of attempt 1 of a new run.
func testInvocation(t *testing.T) *sortie.Invocation {
	t.Helper()
	inv := &sortie.Invocation{
		Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID:  sortie.NewLaunchID(),
		Agent:     sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe"},
		Variables: []byte(`{"events":1}`), DeadlineMs: time.Now().Add(time.Hour).UnixMilli(),
		HeartbeatMs: 200, LeaseMs: 600, Report: sortie.Report{Mode: sortie.ReportControlPlane},
	}
	if err := inv.Validate(); err != nil {
		t.Fatalf("testInvocation: Validate() = %v, want nil", err)
	}
	return inv
}

// shellLauncher returns a subprocess launcher whose worker is
// `/bin/sh -c script`, logging to a fresh directory. Its live children are
// killed when the test ends.
func shellLauncher(t *testing.T, script string, opts *Options) *Launcher {
	t.Helper()
	o := Options{Command: []string{"/bin/sh", "-c", script}, LogDir: t.TempDir(), Grace: 100 * time.Millisecond}
	if opts != nil {
		o.Env, o.Grace = opts.Env, opts.Grace
	}
	l, err := New(&o)
	if err != nil {
		t.Fatalf("New(%q) = %v, want nil", script, err)
	}
	t.Cleanup(func() {
		if err := l.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown() = %v, want nil", err)
		}
	})
	return l
}

func start(t *testing.T, l *Launcher, inv *sortie.Invocation) sortie.Ref {
	t.Helper()
	ref, err := l.Start(t.Context(), inv)
	if err != nil {
		t.Fatalf("Start(run %s attempt %d) = %v, want nil", inv.RunID, inv.Attempt, err)
	}
	return ref
}

// readLog returns the attempt's log file.
func readLog(t *testing.T, ref sortie.Ref) string {
	t.Helper()
	b, err := os.ReadFile(ref.Detail[DetailLog])
	if err != nil {
		t.Fatalf("read log of pid %s: %v", ref.ID, err)
	}
	return string(b)
}

// waitLog waits until the attempt's log contains s.
func waitLog(t *testing.T, ref sortie.Ref, s string) {
	t.Helper()
	waitFor(t, "log to contain "+s, func() bool {
		b, _ := os.ReadFile(ref.Detail[DetailLog])
		return strings.Contains(string(b), s)
	})
}

// waitEnded waits until Describe reports a phase other than running and
// returns that status.
func waitEnded(t *testing.T, l *Launcher, ref sortie.Ref) sortie.Status {
	t.Helper()
	var st sortie.Status
	waitFor(t, "Describe to report the attempt ended", func() bool {
		var err error
		st, err = l.Describe(t.Context(), ref)
		if err != nil {
			t.Fatalf("Describe(%s) = %v, want nil", ref.ID, err)
		}
		return st.Phase != sortie.PhaseRunning
	})
	return st
}

func intPtr(v int) *int { return &v }
