package sortie

import (
	"context"
	"errors"
	"time"
)

// DefaultCancelTimeoutMs is the default of [Policy.CancelTimeoutMs]: how
// long a claimed attempt has to stop after its run's cancel was requested
// before the run is cancelled without it, in ms.
const DefaultCancelTimeoutMs = 15_000

// Cancel requests the run's cancellation (sticky) and returns at once with
// the run as stored; a terminal run is returned unchanged. What reaches
// compute happens in the background, in every window:
//
//   - before the launch: nothing runs, the run is cancelled at once;
//   - Start in flight: the run is cancelled at once and the compute is
//     stopped as soon as Start returns its Ref;
//   - launched, not claimed: the run is cancelled at once and the
//     launcher's Cancel ([Canceler]) stops the compute, whose claim would
//     be refused anyway;
//   - running, or frozen: the worker sees the cancel on its next heartbeat
//     while the launcher's Cancel stops the compute; the run becomes
//     cancelled when the worker stops, or after the run's
//     [Policy.CancelTimeoutMs] without it (here, or in the reconciler of
//     any host).
//
// reason must pass [CheckCancelReason], else it is a [*ValidationError]
// for field "reason".
func (e *Engine) Cancel(ctx context.Context, id RunID, reason string) (*Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := CheckCancelReason(reason); err != nil {
		return nil, err
	}
	run, err := e.cp.RequestCancel(ctx, id, reason)
	if errors.Is(err, ErrUnavailable) {
		run, err = e.cancelBlocked(ctx, id, reason, err)
	}
	if err != nil {
		return nil, err
	}
	cur := run.Current()
	if cur == nil || (cur.Ended() && cur.Outcome != StateCancelled) {
		return e.priced(run), nil
	}
	if cur.Ref != nil {
		e.stopCompute(run, *cur.Ref)
	}
	if !cur.Ended() {
		e.armCancelTimeout(run)
	}
	return e.priced(run.Clone()), nil
}

// cancelBlocked handles a cancel request the control plane could not
// record because it was busy: a worker frozen inside one of its writes
// (holding a SQLite file's write lock) holds back every writer, the cancel
// included. Reads go on, so it stops the run's live compute (within the
// cancel timeout), which releases the lock, and records the request again.
// Without a live compute to stop it returns cause.
func (e *Engine) cancelBlocked(ctx context.Context, id RunID, reason string, cause error) (*Run, error) {
	run, err := e.cp.Get(ctx, id)
	c, ok := e.launcher.(Canceler)
	if err != nil || !ok || run.Current() == nil || run.Current().Ref == nil || run.Current().Ended() {
		return nil, cause
	}
	e.log.Warn("cancel: the control plane is busy; stopping the run's compute first", "run", id, "err", cause)
	sctx, cancel := context.WithTimeout(ctx, run.Policy.CancelTimeout())
	defer cancel()
	if err := c.Cancel(sctx, *run.Current().Ref); err != nil {
		return nil, errors.Join(cause, err)
	}
	return e.cp.RequestCancel(ctx, id, reason)
}

// CancelTimeout returns CancelTimeoutMs as a duration, or the default
// ([DefaultCancelTimeoutMs]) when it is unset (a run stored before the
// field existed).
func (p Policy) CancelTimeout() time.Duration {
	ms := p.CancelTimeoutMs
	if ms <= 0 {
		ms = DefaultCancelTimeoutMs
	}
	return time.Duration(ms) * time.Millisecond
}

// stopCompute calls the launcher's Cancel for ref in the background,
// bounded by the run's cancel timeout (a launcher with a kill grace, like
// the local one, kills before it ends). Without a [Canceler] cancellation
// is the cooperative one every worker sees on its heartbeat.
func (e *Engine) stopCompute(run *Run, ref Ref) {
	c, ok := e.launcher.(Canceler)
	if !ok {
		return
	}
	timeout := run.Policy.CancelTimeout()
	e.life.goBackground(func() {
		e.life.awaitLaunch(ref.LaunchID)
		ctx, cancel := context.WithTimeout(e.life.hard, timeout)
		defer cancel()
		if err := c.Cancel(ctx, ref); err != nil {
			e.log.Warn("provider cancel failed; the worker stops on its next heartbeat", "run", run.ID, "attempt", ref.Attempt, "err", err)
		}
	})
}

// armCancelTimeout reconciles the run in the background when its cancel
// timeout has passed (run.LeaseExpiresMs, which RequestCancel brought
// forward), so a worker that does not stop leaves the run cancelled then,
// not at its lease. Close stops the wait; the reconciler of any host acts
// on the same deadline.
func (e *Engine) armCancelTimeout(run *Run) {
	if run.LeaseExpiresMs == 0 {
		return
	}
	due := time.UnixMilli(run.LeaseExpiresMs)
	e.life.goBackground(func() {
		t := time.NewTimer(due.Sub(e.now()))
		defer t.Stop()
		select {
		case <-e.life.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(e.life.hard, writeTimeout)
		defer cancel()
		_, err := e.reconcileID(ctx, run.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			// Cancelled, then deleted: nothing is left to reconcile.
			e.log.Debug("cancel timeout: the run was deleted meanwhile", "run", run.ID)
		case err != nil:
			e.log.Warn("cancel timeout", "run", run.ID, "err", err)
		}
	})
}

// CheckCancelReason checks a cancel request's reason: at most
// [MaxCancelReasonBytes] bytes of UTF-8 without control characters (it is
// printed as it is). A client checks it before it encodes it (encoding/json
// replaces invalid UTF-8). It returns a [*ValidationError] for "reason".
func CheckCancelReason(reason string) error {
	if len(reason) > MaxCancelReasonBytes {
		return invalidf("reason", "%d bytes, limit %d", len(reason), MaxCancelReasonBytes)
	}
	if !printable(reason) {
		return invalidf("reason", "must be UTF-8 without control characters")
	}
	return nil
}
