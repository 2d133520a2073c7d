package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/local"
)

// subprocessHarness runs each attempt as a `sortie worker` subprocess that
// reports to a SQLite control plane in a fresh state directory, which the
// test process opens too.
type subprocessHarness struct {
	t      *testing.T
	logDir string
	cp     *sqlite.ControlPlane
	l      *local.Launcher
	gate   *claimGate
}

func (h *subprocessHarness) MakeLauncher(ctx context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	h.gate = newClaimGate(t)
	h.l, h.cp, h.logDir = newSubprocess(t, h.gate)
	return h.l, h.cp
}

// newSubprocess returns a subprocess launcher of `sortie worker` and the
// SQLite control plane of a fresh state directory its workers report to.
// With gate, each worker passes the claim gate first.
func newSubprocess(tb testing.TB, gate *claimGate) (*local.Launcher, *sqlite.ControlPlane, string) {
	dir := tb.TempDir()
	cp, err := sqlite.Open(filepath.Join(dir, "sortie.db"), nil)
	if err != nil {
		tb.Fatalf("sqlite.Open(%s) = %v, want nil", dir, err)
	}
	logDir := filepath.Join(dir, "logs")
	cmd := []string{sortieBin, "worker"}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SORTIE_STATE_DIR=" + dir, "SORTIE_LOG_LEVEL=info"}
	if gate != nil {
		self, err := os.Executable()
		if err != nil {
			tb.Fatal(err)
		}
		cmd, env = []string{self}, append(env, gate.env()...)
	}
	l, err := local.New(&local.Options{Command: cmd, Env: env, LogDir: logDir})
	if err != nil {
		_ = cp.Close()
		tb.Fatalf("local.New(%s worker) = %v, want nil", sortieBin, err)
	}
	return l, cp, logDir
}

func (h *subprocessHarness) CanCancelRunning() bool { return true }
func (h *subprocessHarness) CanDescribe() bool      { return true }
func (h *subprocessHarness) ReportsExits() bool     { return true }
func (h *subprocessHarness) WorkerCanCrash() bool   { return true }
func (h *subprocessHarness) CanFreeze() bool        { return true }
func (h *subprocessHarness) CanHoldClaims() bool    { return true }

func (h *subprocessHarness) HoldStarts(*testing.T) func() { return local.HoldStarts(h.l) }

// HoldClaims holds new workers at the claim gate, before they become
// `sortie worker`.
func (h *subprocessHarness) HoldClaims(*testing.T) func() {
	h.gate.hold()
	return h.gate.release
}
func (h *subprocessHarness) CancelCalls() int { return int(local.Cancels(h.l)) }

// Freeze stops the worker's process group with SIGSTOP and waits until the
// worker is stopped.
func (h *subprocessHarness) Freeze(t *testing.T, ref sortie.Ref) {
	t.Helper()
	pid, err := strconv.Atoi(ref.ID)
	if err != nil {
		t.Fatalf("Freeze: ref ID %q is not a pid", ref.ID)
	}
	freeze(t, pid)
}

// freeze stops the process group of pid with SIGSTOP and waits until the
// process is stopped.
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("kill(-%d, SIGSTOP) = %v", pid, err)
	}
	waitFor(t, "the worker to stop", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, rest, _ := strings.Cut(string(b), ") ")
		return err == nil && strings.HasPrefix(rest, "T")
	})
}

// Close stops live workers, prints their logs when the test failed, and
// closes the control plane.
func (h *subprocessHarness) Close() {
	if h.l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.l.Shutdown(ctx); err != nil {
			h.t.Errorf("Shutdown() = %v, want nil", err)
		}
	}
	if h.t.Failed() && h.logDir != "" {
		logs, _ := filepath.Glob(filepath.Join(h.logDir, "*.log"))
		for _, p := range logs {
			b, _ := os.ReadFile(p)
			h.t.Logf("worker log %s:\n%s", filepath.Base(p), b)
		}
	}
	if h.cp != nil {
		_ = h.cp.Close()
	}
}

// TestSubprocessWorkerReports checks that an attempt really ran in the
// `sortie worker` subprocess: the claim's owner names the worker's pid, and
// its log holds the NDJSON messages of stdout and the logs of stderr.
func TestSubprocessWorkerReports(t *testing.T) {
	h := &subprocessHarness{t: t}
	defer h.Close()
	l, cp := h.MakeLauncher(t.Context(), t)
	e := sortie.NewEngine(cp, l, sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}, nil)
	defer e.Close()
	c := sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	run, err := c.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: []byte(`{"events":2,"output":"from the worker"}`)})
	if err != nil {
		t.Fatalf("Submit(probe) = %v, want nil", err)
	}
	if run, err = c.Wait(t.Context(), run.ID); err != nil || run.State != sortie.StateCompleted {
		t.Fatalf("Wait(%s) = %v, %v, want completed", run.ID, run, err)
	}
	var ref *sortie.Ref
	waitFor(t, "the attempt's Ref", func() bool {
		r, err := c.Get(t.Context(), run.ID)
		if err == nil && r.Attempts[0].Ref != nil {
			run, ref = r, r.Attempts[0].Ref
		}
		return ref != nil
	})
	if owner := run.Attempts[0].Owner; !strings.HasSuffix(owner, "/"+ref.ID) {
		t.Errorf("attempt 1 owner = %q, want the worker process %s", owner, ref.ID)
	}
	waitFor(t, "the worker to exit", func() bool {
		st, _ := l.(*local.Launcher).Describe(t.Context(), *ref)
		return st.Phase == sortie.PhaseSucceeded
	})
	log, err := os.ReadFile(filepath.Join(h.logDir, fmt.Sprintf("%s-1.log", run.ID)))
	if err != nil {
		t.Fatalf("read worker log: %v", err)
	}
	for _, want := range []string{`"text":"event 2 of 2"`, `{"result":{"output":"from the worker"}}`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("worker log lacks %s:\n%s", want, log)
		}
	}
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, 30*time.Second, cond)
}

// CanCancelOutside is false: a process has no cancel of its own; a kill is
// a crash (CrashedWorkerIsRetried).
func (h *subprocessHarness) CanCancelOutside() bool               { return false }
func (h *subprocessHarness) CancelOutside(*testing.T, sortie.Ref) {}

// QueuesLaunches is false: a spawn has no queue.
func (h *subprocessHarness) QueuesLaunches() bool { return false }

// LimitsInvocations is false: stdin takes any invocation a worker takes.
func (h *subprocessHarness) LimitsInvocations() bool { return false }
