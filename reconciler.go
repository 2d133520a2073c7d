package sortie

import (
	"context"
	"errors"
	"time"
)

// ReconcileAll reconciles until nothing it started is left undone and
// returns how many runs it acted on: it repeats passes while they act on
// runs (a backlog drains in one call, 100 runs a pass), and when a run it
// acted on is waiting for a retry (its backoff), it waits and launches
// that retry, unless the retry comes after ctx's deadline. `sortie
// reconcile --once` and the Lambda reconciler call it: one call after a
// lease expiry ends the attempt and starts the next one.
func (e *Engine) ReconcileAll(ctx context.Context) (int, error) {
	touched := map[RunID]bool{}
	total, err := e.AdmitQueued(ctx)
	if err != nil && !errors.Is(err, ErrClosed) {
		e.log.Warn("admit queued runs", "err", err)
	}
	for {
		n, err := e.reconcilePass(ctx, false, touched)
		total += n
		if err != nil || n > 0 {
			if err != nil {
				return total, err
			}
			continue
		}
		due, ok := e.nextRetry(ctx, touched)
		if !ok || !waitUntil(ctx, due, e.now) {
			return total, nil
		}
	}
}

// nextRetry returns the earliest time one of the runs touched waits for
// its next attempt, when that is before ctx's deadline.
func (e *Engine) nextRetry(ctx context.Context, touched map[RunID]bool) (time.Time, bool) {
	var next time.Time
	for id := range touched {
		run, err := e.cp.Get(ctx, id)
		if err != nil || run.State.Terminal() || run.State.Interrupted() || run.LeaseExpiresMs == 0 {
			delete(touched, id)
			continue
		}
		if cur := run.Current(); cur != nil && !cur.Ended() {
			delete(touched, id) // launched: what it started is done
			continue
		}
		if due := time.UnixMilli(run.LeaseExpiresMs); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	if d, ok := ctx.Deadline(); next.IsZero() || (ok && next.After(d)) {
		return time.Time{}, false
	}
	return next, true
}

// waitUntil waits until due on the clock now, or until ctx ends (false).
func waitUntil(ctx context.Context, due time.Time, now func() time.Time) bool {
	t := time.NewTimer(due.Sub(now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RunReconciler calls Reconcile every interval until ctx ends or the
// engine closes. Every long-lived sortie process runs one, so embedded
// runs recover without a separate daemon. Its first pass, and a pass after
// a gap of more than three intervals (the process was stopped or
// suspended), give claimed attempts whose lease expired while it was not
// running one lease of grace (at least 5 s), unless their launcher says
// their compute ended: a host restarted after a downtime longer than the lease does not
// start a second attempt beside a worker that is alive and retrying its
// heartbeats.
func (e *Engine) RunReconciler(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	slots, stop := e.slotWakes()
	defer stop()
	var last time.Time
	for {
		now := time.Now()
		grace := last.IsZero() || now.Sub(last) > 3*interval
		last = now
		if _, err := e.reconcilePass(ctx, grace, nil); errors.Is(err, ErrClosed) {
			return
		} else if err != nil && ctx.Err() == nil {
			e.log.Warn("reconcile", "err", err)
		}
		for {
			e.admitQueued(ctx)
			select {
			case <-ctx.Done():
				return
			case <-slots:
				continue // a slot freed in this process: admit at once
			case <-t.C:
			}
			break
		}
	}
}

// slotWakes returns the control plane's slot wake-ups ([SlotNotifier]),
// or a channel that never fires.
func (e *Engine) slotWakes() (<-chan struct{}, func()) {
	if n, ok := e.cp.(SlotNotifier); ok {
		return n.SubscribeSlots()
	}
	return nil, func() {}
}

// admitQueued runs [Engine.AdmitQueued] and logs what failed.
func (e *Engine) admitQueued(ctx context.Context) {
	if _, err := e.AdmitQueued(ctx); err != nil && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
		e.log.Warn("admit queued runs", "err", err)
	}
}
