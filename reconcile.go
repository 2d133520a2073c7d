package sortie

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// reconcileBatch is the most runs one pass reads.
const reconcileBatch = 100

// defaultDescribeInterval is the default of EngineOptions.DescribeInterval.
const defaultDescribeInterval = 5 * time.Second

// minGrace is the least grace a reconciler that was not running gives a
// claimed attempt whose lease expired meanwhile: the longest a worker
// waits between two tries of a callback (functions' callback backoff cap),
// so a worker retrying through the restart is heard from within it.
const minGrace = 5 * time.Second

// Reconcile runs one pass over the runs whose lease expired (at most 100,
// oldest first) and moves each on; it returns how many it acted on:
//
//   - a reservation nobody launched, or a retry that is due, is launched
//     (unless the previous attempt's compute was cancelled by the provider
//     outside Sortie: then the run is cancelled with the provider's words);
//   - an attempt launched but not claimed is described ([Describer]): one
//     whose compute ended (failed, cancelled, gone) ends with the
//     provider's reason; one still starting is looked at again after
//     EngineOptions.DescribeInterval, until its start deadline; past it, it
//     ends with error type start_timeout;
//   - a claimed attempt whose lease expired is described: compute that
//     ended ends the attempt with the provider's reason, else it ends with
//     error type lease_expired and its compute is stopped; after a cancel
//     request it ends cancelled (its cancel timeout passed).
//
// An execution's success never completes a run: only the worker's result
// does. Conditional writes make concurrent reconcilers in several
// processes safe. It returns ErrClosed after Close.
func (e *Engine) Reconcile(ctx context.Context) (int, error) {
	return e.reconcilePass(ctx, false, nil)
}

// reconcilePass is one pass. With grace (the first pass of a reconciler
// that was not running), a claimed attempt whose lease expired and whose
// compute may be alive gets one lease of grace (at least 5 s, the longest
// gap between a worker's callback retries) instead of being ended: its
// worker's heartbeats or outcome, retried while this host was away, land
// first.
// touched, when set, collects the runs acted on.
func (e *Engine) reconcilePass(ctx context.Context, grace bool, touched map[RunID]bool) (int, error) {
	if err := e.life.acquire("reconcile"); err != nil {
		return 0, err
	}
	defer e.life.release()
	runs, err := e.cp.Expired(ctx, e.nowMs(), reconcileBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, run := range runs {
		acted, err := e.reconcileRun(ctx, run, grace)
		if err != nil && !errors.Is(err, ErrConflict) {
			e.log.Warn("reconcile", "run", run.ID, "err", err)
			continue
		}
		if acted {
			n++
			if touched != nil {
				touched[run.ID] = true
			}
		}
	}
	return n, nil
}

// reconcileID reconciles one run when it is due (its lease expired).
func (e *Engine) reconcileID(ctx context.Context, id RunID) (bool, error) {
	run, err := e.cp.Get(ctx, id)
	if err != nil || run.State.Terminal() || run.LeaseExpiresMs == 0 || run.LeaseExpiresMs > e.nowMs() {
		return false, err
	}
	return e.reconcileRun(ctx, run, false)
}

func (e *Engine) reconcileRun(ctx context.Context, run *Run, grace bool) (bool, error) {
	cur := run.Current()
	switch {
	case cur == nil || cur.Ended():
		recordLag(ctx, run, "due", e.nowMs())
		return e.reconcileDue(ctx, run)
	case !cur.Claimed():
		recordLag(ctx, run, "unclaimed", e.nowMs())
		return e.reconcileUnclaimed(ctx, run, cur)
	}
	recordLag(ctx, run, "claimed", e.nowMs())
	return e.reconcileClaimed(ctx, run, cur, grace)
}

// reconcileDue launches a run's next attempt, or cancels it.
func (e *Engine) reconcileDue(ctx context.Context, run *Run) (bool, error) {
	reason := run.Reason
	if st, ok := e.cancelledOutside(ctx, run); ok {
		reason = cancelledOutsideReason(st)
		e.log.Info("reconcile: the previous attempt was cancelled outside Sortie", "run", run.ID, "reason", st.Reason)
	} else if !run.CancelRequested {
		e.log.Info("reconcile: launching", "run", run.ID, "attempt", run.Attempt+1)
		_, err := e.launch(ctx, run)
		return err == nil, err
	}
	_, err := e.cp.RequestCancel(ctx, run.ID, reason)
	return err == nil, err
}

// cancelledOutside reports whether the compute of the run's last attempt,
// which its worker ended with a retryable error (a SIGTERM, a lost lease),
// was cancelled by the provider: an operator cancelled the execution, and
// the run must not be retried.
func (e *Engine) cancelledOutside(ctx context.Context, run *Run) (Status, bool) {
	prev := run.Current()
	if prev == nil || prev.Error == nil || !prev.Error.Retryable {
		return Status{}, false
	}
	if prev.Exit != nil { // the provider's word is already on the attempt
		return *prev.Exit, prev.Exit.Phase == PhaseCancelled
	}
	st, ok := e.describe(ctx, prev)
	return st, ok && st.Phase == PhaseCancelled
}

// describe asks the launcher, when it is a [Describer], what became of
// the attempt's compute. ok is false without a Describer or a Ref, or
// when the provider could not say.
func (e *Engine) describe(ctx context.Context, a *Attempt) (Status, bool) {
	d, ok := e.launcher.(Describer)
	if !ok || a.Ref == nil {
		return Status{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	st, err := d.Describe(ctx, *a.Ref)
	if err != nil || st.Phase == PhaseUnknown {
		e.log.Debug("reconcile: describe", "run", a.Ref.RunID, "attempt", a.Number, "phase", st.Phase, "err", err)
		return st, false
	}
	return st, true
}

// reconcileUnclaimed looks at an attempt no worker claimed yet.
func (e *Engine) reconcileUnclaimed(ctx context.Context, run *Run, cur *Attempt) (bool, error) {
	if st, ok := e.describe(ctx, cur); ok && st.Phase != PhaseRunning {
		_, err := e.endFromStatus(ctx, run, cur, st)
		return err == nil, err
	}
	now := e.nowMs()
	if deadline := cur.StartDeadlineMs(run.Policy); now < deadline {
		_, err := e.cp.Defer(ctx, Deferral{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
			UntilMs: now + e.opts.DescribeInterval.Milliseconds(), IfVersion: run.Version, NowMs: now})
		return false, err
	}
	msg := &ErrorMessage{Type: ErrorTypeStartTimeout, Retryable: true,
		Message: "no worker claimed the attempt before its start timeout"}
	return e.endAttempt(ctx, run, cur, msg)
}

// reconcileClaimed looks at a claimed attempt whose lease expired.
func (e *Engine) reconcileClaimed(ctx context.Context, run *Run, cur *Attempt, grace bool) (bool, error) {
	if deadline := run.CancelRequestedMs + run.Policy.CancelTimeout().Milliseconds(); run.CancelRequested && e.nowMs() < deadline {
		return e.stopAsked(ctx, run, cur, deadline)
	}
	if run.CancelRequested {
		msg := &ErrorMessage{Type: ErrorTypeCancelled,
			Message: fmt.Sprintf("the worker did not stop within the cancel timeout (%d ms)", run.Policy.CancelTimeout().Milliseconds())}
		return e.endAttempt(ctx, run, cur, msg)
	}
	if st, ok := e.describe(ctx, cur); ok && st.Phase != PhaseRunning {
		_, err := e.endFromStatus(ctx, run, cur, st)
		return err == nil, err
	}
	if grace {
		now := e.nowMs()
		e.log.Info("reconcile: a lease of grace for an attempt whose worker may be alive", "run", run.ID, "attempt", cur.Number)
		grace := max(run.Policy.LeaseMs, minGrace.Milliseconds())
		_, err := e.cp.Defer(ctx, Deferral{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
			UntilMs: now + grace, IfVersion: run.Version, NowMs: now})
		return false, err
	}
	msg := &ErrorMessage{Type: ErrorTypeLeaseExpired, Retryable: true,
		Message: "the worker stopped heartbeating; its lease expired"}
	return e.endAttempt(ctx, run, cur, msg)
}

// stopAsked takes over a cancel requested inside the control plane (a
// budget stop, made due at once by a worker's heartbeat): the lifecycle's
// cancel, as [Engine.Cancel] does it, stops the attempt's compute and
// the run's lease moves to its cancel deadline, when the attempt is ended
// if its worker has not stopped by then.
func (e *Engine) stopAsked(ctx context.Context, run *Run, cur *Attempt, deadline int64) (bool, error) {
	e.log.Info("reconcile: stopping an attempt whose run's cancel was requested", "run", run.ID, "attempt", cur.Number, "reason", run.Reason)
	if cur.Ref != nil {
		e.stopCompute(run, *cur.Ref)
	}
	_, err := e.cp.Defer(ctx, Deferral{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
		UntilMs: deadline, IfVersion: run.Version, NowMs: e.nowMs()})
	return err == nil, err
}

// endAttempt ends a live attempt with msg, conditional on the run's
// version (a late heartbeat wins), and stops its compute.
func (e *Engine) endAttempt(ctx context.Context, run *Run, cur *Attempt, msg *ErrorMessage) (bool, error) {
	e.log.Info("reconcile: ending attempt", "run", run.ID, "attempt", cur.Number, "reason", msg.Type)
	_, err := e.cp.Finish(ctx, Finish{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
		Outcome: Outcome{Error: msg}, IfVersion: run.Version, NowMs: e.nowMs()})
	if err != nil {
		return false, err
	}
	if cur.Ref != nil {
		e.stopCompute(run, *cur.Ref)
	}
	return true, nil
}
