package local_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// warmHarness runs attempts as the sortie host does by default: an
// in-process launcher whose worker claims and reports each attempt here
// while its handler runs on a pool of warm `sortie worker --session`
// processes.
type warmHarness struct {
	t    *testing.T
	cp   *memory.ControlPlane
	pool *functions.Pool
	l    *local.Launcher
	gate gate
}

func (h *warmHarness) MakeLauncher(ctx context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	dir := t.TempDir()
	var err error
	h.pool, err = functions.NewPool(functions.ExecSpec{Command: []string{sortieBin, "worker", "--session"},
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SORTIE_STATE_DIR=" + dir}},
		&functions.PoolOptions{Size: 4, Grace: time.Second})
	if err != nil {
		t.Fatalf("functions.NewPool = %v", err)
	}
	h.cp = memory.New()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, Owner: "warm-pool-test", Warm: map[string]*functions.Pool{"go": h.pool},
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	h.l, err = local.New(&local.Options{Grace: 5 * time.Second, InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		if err := h.gate.pass(ctx); err != nil {
			return err
		}
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(h.cp, inv, w.Owner))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New(InProcess) = %v", err)
	}
	return h.l, h.cp
}

func (h *warmHarness) CanCancelRunning() bool { return true }
func (h *warmHarness) CanDescribe() bool      { return true }
func (h *warmHarness) ReportsExits() bool     { return true }
func (h *warmHarness) CancelCalls() int       { return int(local.Cancels(h.l)) }
func (h *warmHarness) CanHoldClaims() bool    { return true }

// CanCancelOutside and QueuesLaunches are false: a warm process has no
// cancel of its own (killing it is a crash) and no queue.
func (h *warmHarness) CanCancelOutside() bool               { return false }
func (h *warmHarness) CancelOutside(*testing.T, sortie.Ref) {}
func (h *warmHarness) QueuesLaunches() bool                 { return false }
func (h *warmHarness) LimitsInvocations() bool              { return false }

func (h *warmHarness) HoldStarts(*testing.T) func() { return local.HoldStarts(h.l) }

// HoldClaims holds new attempts before their worker claims (and so before
// they take a warm process).
func (h *warmHarness) HoldClaims(*testing.T) func() {
	h.gate.hold()
	return h.gate.release
}

// WorkerCanCrash is true: probe's crash ends the warm process, not the
// test's.
func (h *warmHarness) WorkerCanCrash() bool { return true }
func (h *warmHarness) CanFreeze() bool      { return true }

// Freeze stops the warm process running the attempt.
func (h *warmHarness) Freeze(t *testing.T, ref sortie.Ref) {
	t.Helper()
	var pid int
	waitFor(t, "a warm process to run the attempt", func() bool {
		pid = h.pool.Running()[ref.LaunchID]
		return pid != 0
	})
	freeze(t, pid)
}

func (h *warmHarness) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if h.l != nil {
		if err := h.l.Shutdown(ctx); err != nil {
			h.t.Errorf("Shutdown() = %v, want nil", err)
		}
	}
	if h.pool != nil {
		if err := h.pool.Close(ctx); err != nil {
			h.t.Errorf("pool.Close() = %v, want nil", err)
		}
	}
	if h.cp != nil {
		_ = h.cp.Close()
	}
}
