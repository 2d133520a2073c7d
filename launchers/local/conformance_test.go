package local_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/launchertest"
	"github.com/sortie-run/sortie/launchers/local"
)

func TestConformance(t *testing.T) {
	t.Run("subprocess", func(t *testing.T) {
		launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness {
			return &subprocessHarness{t: t}
		})
	})
	t.Run("in-process", func(t *testing.T) {
		launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness {
			return &inProcessHarness{t: t}
		})
	})
	t.Run("warm-pool", func(t *testing.T) {
		launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness {
			return &warmHarness{t: t}
		})
	})
}

// inProcessHarness runs attempts in goroutines of the test process with
// the worker runtime and probe, reporting to a memory control plane.
type inProcessHarness struct {
	t    *testing.T
	cp   *memory.ControlPlane
	l    *local.Launcher
	gate gate
}

func (h *inProcessHarness) MakeLauncher(ctx context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	h.l, h.cp = newInProcess(t, t.Output(), &h.gate)
	return h.l, h.cp
}

// gate holds in-process workers before they claim, while held.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // nil: not held
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = make(chan struct{})
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

// pass waits while the gate is held, or until ctx ends.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open == nil {
		return nil
	}
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newInProcess returns an in-process launcher whose attempts run the worker
// runtime with probe, reporting to a new memory control plane; the worker
// logs warnings to logs. With g, each attempt passes g before it claims.
func newInProcess(tb testing.TB, logs io.Writer, g *gate) (*local.Launcher, *memory.ControlPlane) {
	cp := memory.New()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, Owner: "in-process-test",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	l, err := local.New(&local.Options{Grace: 5 * time.Second, InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		if g != nil {
			if err := g.pass(ctx); err != nil {
				return err
			}
		}
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, w.Owner))
		return err
	}})
	if err != nil {
		tb.Fatalf("local.New(InProcess) = %v, want nil", err)
	}
	return l, cp
}

func (h *inProcessHarness) CanCancelRunning() bool { return true }
func (h *inProcessHarness) CanDescribe() bool      { return true }
func (h *inProcessHarness) ReportsExits() bool     { return true }
func (h *inProcessHarness) CancelCalls() int       { return int(local.Cancels(h.l)) }

func (h *inProcessHarness) CanHoldClaims() bool          { return true }
func (h *inProcessHarness) HoldStarts(*testing.T) func() { return local.HoldStarts(h.l) }

func (h *inProcessHarness) HoldClaims(*testing.T) func() {
	h.gate.hold()
	return h.gate.release
}

// CanFreeze is false: a goroutine cannot be stopped from outside.
func (h *inProcessHarness) CanFreeze() bool               { return false }
func (h *inProcessHarness) Freeze(*testing.T, sortie.Ref) {}

// WorkerCanCrash is false: probe's crash exits the process, which here is
// the test's.
func (h *inProcessHarness) WorkerCanCrash() bool { return false }

func (h *inProcessHarness) Close() {
	if h.l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.l.Shutdown(ctx); err != nil {
			h.t.Errorf("Shutdown() = %v, want nil", err)
		}
	}
	if h.cp != nil {
		_ = h.cp.Close()
	}
}

// CanCancelOutside is false: a goroutine has no cancel of its own.
func (h *inProcessHarness) CanCancelOutside() bool               { return false }
func (h *inProcessHarness) CancelOutside(*testing.T, sortie.Ref) {}

// QueuesLaunches is false: a goroutine has no queue.
func (h *inProcessHarness) QueuesLaunches() bool { return false }

// LimitsInvocations is false: a goroutine takes any invocation.
func (h *inProcessHarness) LimitsInvocations() bool { return false }
