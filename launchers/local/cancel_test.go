package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

func TestCancelTermThenKill(t *testing.T) {
	for _, tc := range []struct {
		name, script, reason, signal string
	}{
		{"worker stops on SIGTERM", `echo ready >&2; exec /bin/sleep 600`, "stopped by Cancel; worker signal: terminated", "SIGTERM"},
		{"worker ignores SIGTERM", `trap '' TERM; echo ready >&2; exec /bin/sleep 600`, "stopped by Cancel; worker signal: killed", "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := shellLauncher(t, tc.script, &Options{Grace: 50 * time.Millisecond})
			ref := start(t, l, testInvocation(t))
			waitLog(t, ref, "ready")
			if err := l.Cancel(t.Context(), ref); err != nil {
				t.Fatalf("Cancel() = %v, want nil", err)
			}
			st, err := l.Describe(t.Context(), ref)
			want := sortie.Status{Phase: sortie.PhaseCancelled, ExitCode: intPtr(-1), Reason: tc.reason, Signal: tc.signal, LogURL: ref.Detail[DetailLog]}
			if diff := cmp.Diff(want, st); err != nil || diff != "" {
				t.Errorf("Describe() after Cancel returned = %v (-want +got):\n%s", err, diff)
			}
			if err := l.Cancel(t.Context(), ref); err != nil {
				t.Errorf("second Cancel() = %v, want nil (idempotent)", err)
			}
		})
	}
}

// termScript logs each SIGTERM it receives and keeps running. It forks
// nothing while it waits (reading a FIFO it holds open for writing too), so
// a SIGSTOP of its group never catches a child between vfork and exec.
const termScript = `trap 'echo TERM >&2' TERM; exec 3<>'FIFO'; echo ready >&2; while :; do read x <&3; done`

// pendingTerm reports whether SIGTERM is pending for pid (ShdPnd in
// /proc/<pid>/status), which a stopped process with a handler keeps.
func pendingTerm(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("parse ShdPnd %q: %v", v, err)
			}
			return mask&(1<<(syscall.SIGTERM-1)) != 0
		}
	}
	t.Fatalf("/proc/%d/status has no ShdPnd", pid)
	return false
}

// termLauncher returns a launcher of termScript with a fresh FIFO.
func termLauncher(t *testing.T) *Launcher {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("Mkfifo(%s) = %v", fifo, err)
	}
	return shellLauncher(t, strings.Replace(termScript, "FIFO", fifo, 1), nil)
}

// stopped starts termScript and stops its process group (SIGSTOP), so a
// SIGTERM sent to it stays pending and observable.
func stopped(t *testing.T, l *Launcher) (sortie.Ref, int) {
	t.Helper()
	ref := start(t, l, testInvocation(t))
	pid, _ := strconv.Atoi(ref.ID)
	waitLog(t, ref, "ready")
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("kill(-%d, SIGSTOP) = %v", pid, err)
	}
	waitFor(t, "worker to stop", func() bool { st, err := readStat(pid); return err == nil && st.state == 'T' })
	return ref, pid
}

func TestCancelForeignChecksStartTime(t *testing.T) {
	l := termLauncher(t)
	ref, pid := stopped(t, l)
	other := shellLauncher(t, `exit 0`, &Options{Grace: 50 * time.Millisecond}) // as another process would

	reused := ref
	reused.Detail = map[string]string{DetailStartTime: "1", DetailLog: ref.Detail[DetailLog]}
	if err := other.Cancel(t.Context(), reused); err != nil {
		t.Fatalf("Cancel(ref with another start time) = %v, want nil", err)
	}
	if pendingTerm(t, pid) {
		t.Fatalf("Cancel(ref with another start time) signalled pid %d, want no signal", pid)
	}
	if st, err := other.Describe(t.Context(), reused); err != nil || st.Phase != sortie.PhaseNotFound {
		t.Errorf("Describe(ref with another start time) = %+v, %v, want not-found", st, err)
	}
	if st, err := other.Describe(t.Context(), ref); err != nil || st.Phase != sortie.PhaseRunning {
		t.Errorf("other launcher Describe(live worker) = %+v, %v, want running", st, err)
	}

	// The recorded start time matches: SIGTERM stays pending in the
	// stopped worker, so Cancel must go on to SIGKILL after Grace.
	if err := other.Cancel(t.Context(), ref); err != nil {
		t.Fatalf("other launcher Cancel(live worker) = %v, want nil", err)
	}
	// To l, its child was killed by someone else: failed, not cancelled.
	want := sortie.Status{Phase: sortie.PhaseFailed, ExitCode: intPtr(-1), Reason: "worker signal: killed", Signal: "SIGKILL", LogURL: ref.Detail[DetailLog]}
	if diff := cmp.Diff(want, waitEnded(t, l, ref)); diff != "" {
		t.Errorf("Describe() after another launcher's Cancel (-want +got):\n%s", diff)
	}
}

func TestCancelForeignTerm(t *testing.T) {
	l := termLauncher(t)
	ref, pid := stopped(t, l)
	if !signalForeign(pid, ref.Detail[DetailStartTime], syscall.SIGTERM) {
		t.Fatalf("signalForeign(live worker, its start time, SIGTERM) = false, want true")
	}
	if !pendingTerm(t, pid) {
		t.Errorf("after signalForeign(SIGTERM) pid %d has no pending SIGTERM", pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
		t.Fatalf("kill(-%d, SIGCONT) = %v", pid, err)
	}
	waitLog(t, ref, "TERM")
}

func TestRefChecks(t *testing.T) {
	l := shellLauncher(t, `exit 0`, nil)
	good := sortie.Ref{Provider: "local", Resource: "sh", ID: "2147483647", Detail: map[string]string{DetailStartTime: "5"}}
	for _, tc := range []struct {
		name  string
		ref   sortie.Ref
		field string
	}{
		{"other provider", sortie.Ref{Provider: "lambda", ID: "x"}, "ref.provider"},
		{"pid not a number", sortie.Ref{Provider: "local", ID: "abc", Detail: good.Detail}, "ref.id"},
		{"pid 1", sortie.Ref{Provider: "local", ID: "1", Detail: good.Detail}, "ref.id"},
		{"no start time", sortie.Ref{Provider: "local", ID: "2147483647"}, "ref.detail.start_time"},
	} {
		var verr *sortie.ValidationError
		if err := l.Cancel(t.Context(), tc.ref); !errors.As(err, &verr) || verr.Field != tc.field {
			t.Errorf("Cancel(%s) = %v, want a ValidationError for %s", tc.name, err, tc.field)
		}
		if _, err := l.Describe(t.Context(), tc.ref); !errors.As(err, &verr) || verr.Field != tc.field {
			t.Errorf("Describe(%s) = %v, want a ValidationError for %s", tc.name, err, tc.field)
		}
	}
	if err := l.Cancel(t.Context(), good); err != nil {
		t.Errorf("Cancel(pid that does not exist) = %v, want nil", err)
	}
	if st, err := l.Describe(t.Context(), good); err != nil || st.Phase != sortie.PhaseNotFound {
		t.Errorf("Describe(pid that does not exist) = %+v, %v, want not-found", st, err)
	}
}

func TestShutdownStopsLiveWorkers(t *testing.T) {
	l := shellLauncher(t, `trap '' TERM; echo ready >&2; exec /bin/sleep 600`, &Options{Grace: 50 * time.Millisecond})
	a, b := start(t, l, testInvocation(t)), start(t, l, testInvocation(t))
	waitLog(t, a, "ready")
	waitLog(t, b, "ready")
	if err := l.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown() = %v, want nil", err)
	}
	for _, ref := range []sortie.Ref{a, b} {
		if st, _ := l.Describe(t.Context(), ref); st.Phase != sortie.PhaseCancelled || st.Signal != "SIGKILL" {
			t.Errorf("Describe(pid %s) after Shutdown = %+v, want cancelled (SIGKILL)", ref.ID, st)
		}
	}
	if _, err := l.Start(t.Context(), testInvocation(t)); !errors.Is(err, sortie.ErrClosed) {
		t.Errorf("Start() after Shutdown = %v, want ErrClosed", err)
	}
}
