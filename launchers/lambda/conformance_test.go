package lambda_test

import (
	"context"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/launchers/launchertest"
)

// TestConformance runs the launcher conformance suite: the engine in the
// test process on the DynamoDB control plane, the worker function's
// bootstrap under the Runtime Interface Emulator reporting to the same
// table.
func TestConformance(t *testing.T) {
	launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness { return &harness{t: t} })
}

type harness struct {
	t *testing.T
	s *serial
}

func (h *harness) MakeLauncher(ctx context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	h.s = &serial{l: newLauncher(t, r, lambda.Options{MaxPayloadBytes: 128 << 10})}
	return h.s, cp
}

// HoldStarts holds the Invoke calls.
func (h *harness) HoldStarts(*testing.T) func() { return h.s.holdStarts() }

// CanHoldClaims: the simulated queue holds accepted events.
func (h *harness) CanHoldClaims() bool { return true }

// HoldClaims holds new events in the simulated queue, as Lambda does while
// the function is throttled.
func (h *harness) HoldClaims(*testing.T) func() { return h.s.holdQueue() }

// CanCancelRunning is false: Lambda cannot stop an invocation; the
// suite's cancel property passes through the worker's heartbeat.
func (h *harness) CanCancelRunning() bool { return false }
func (h *harness) CancelCalls() int       { return 0 }

// CanDescribe is false: the launcher is not a Describer.
func (h *harness) CanDescribe() bool { return false }

// ReportsExits is false: an invocation's end is not reported.
func (h *harness) ReportsExits() bool { return false }

// CanFreeze is false: under the emulator an Event invocation runs inside
// Invoke, so a frozen runtime would hold the Start itself.
func (h *harness) CanFreeze() bool               { return false }
func (h *harness) Freeze(*testing.T, sortie.Ref) {}

// WorkerCanCrash is false: under the emulator an Event invocation runs
// synchronously, so probe's crash (the bootstrap exits 97) comes back to
// Start as a 502 and the engine records a launch failure, where Lambda
// would have answered 202 and sent the failure to the on-failure
// destination. TestCrashRecordedByReconciler covers that path: the real
// failed invocation, its destination record and the reconciler mode.
func (h *harness) WorkerCanCrash() bool { return false }

func (h *harness) Close() {}

// CanCancelOutside is false: Lambda has no cancel of an invocation.
func (h *harness) CanCancelOutside() bool               { return false }
func (h *harness) CancelOutside(*testing.T, sortie.Ref) {}

// QueuesLaunches: an asynchronous invocation waits in Lambda's queue.
func (h *harness) QueuesLaunches() bool { return true }

// LimitsInvocations: the harness's launcher takes at most 128 KiB (Lambda
// takes 1 MB, more than any submission carries).
func (h *harness) LimitsInvocations() bool { return true }
