package cloudrun_test

import (
	"context"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/launchertest"
)

// TestJobsConformance runs the launcher conformance suite on the Jobs
// launcher: the engine in the test process on a SQLite control plane, each
// attempt the real sortie-cloudrun binary started by the fake Admin API
// with the RunJob overrides, reporting to the same file.
func TestJobsConformance(t *testing.T) {
	launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness { return &jobsHarness{} })
}

type jobsHarness struct{ rig *rig }

func (h *jobsHarness) MakeLauncher(_ context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	h.rig = newRig(t)
	return h.rig.launcher, h.rig.cp
}

// CanCancelRunning: CancelExecution stops the container.
func (h *jobsHarness) CanCancelRunning() bool { return true }

// CanDescribe: GetExecution's counts and conditions.
func (h *jobsHarness) CanDescribe() bool { return true }

// WorkerCanCrash: a crash ends the container's process only.
func (h *jobsHarness) WorkerCanCrash() bool { return true }

// ReportsExits is false: the reconciler asks Describe instead.
func (h *jobsHarness) ReportsExits() bool { return false }

// CancelCalls counts the fake Admin API's CancelExecution calls.
func (h *jobsHarness) CancelCalls() int { return h.rig.fake.cancelCalls() }

// HoldStarts holds the fake's RunJob calls.
func (h *jobsHarness) HoldStarts(*testing.T) func() { return h.rig.fake.holdRunJob() }

// CanHoldClaims: an execution can be pending (its container not started).
func (h *jobsHarness) CanHoldClaims() bool { return true }

// HoldClaims makes new executions pending.
func (h *jobsHarness) HoldClaims(*testing.T) func() { return h.rig.fake.holdPending() }

// CanFreeze: the fake's container is a process of this machine.
func (h *jobsHarness) CanFreeze() bool { return true }

// Freeze stops the execution's container with SIGSTOP.
func (h *jobsHarness) Freeze(t *testing.T, ref sortie.Ref) { h.rig.fake.freeze(t, ref.ID) }

func (h *jobsHarness) Close() {}

// CanCancelOutside: an operator can cancel an execution in the console.
func (h *jobsHarness) CanCancelOutside() bool { return true }

// CancelOutside cancels the execution through the fake Admin API, as an
// operator would.
func (h *jobsHarness) CancelOutside(t *testing.T, ref sortie.Ref) {
	h.rig.fake.cancelOutside(t, ref.ID)
}

// QueuesLaunches is false: RunJob starts the execution; it has no queue.
func (h *jobsHarness) QueuesLaunches() bool { return false }

// LimitsInvocations: 32 KiB, one environment variable's value.
func (h *jobsHarness) LimitsInvocations() bool { return true }
