package sortie

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reconcile looks at every run whose lease expired and moves it on: it
// launches reservations nobody launched and retries that are due, and ends
// attempts whose worker never claimed them (start timeout) or stopped
// heartbeating (lease expired), which retries or fails the run per its
// policy. It returns how many runs it acted on. Conditional writes make
// concurrent reconcilers in several processes safe.
func (e *Engine) Reconcile(ctx context.Context) (int, error) {
	if err := e.life.acquire("reconcile"); err != nil {
		return 0, err
	}
	defer e.life.release()
	runs, err := e.cp.Expired(ctx, e.nowMs(), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, run := range runs {
		acted, err := e.reconcileRun(ctx, run)
		if err != nil && !errors.Is(err, ErrConflict) {
			e.log.Warn("reconcile", "run", run.ID, "err", err)
			continue
		}
		if acted {
			n++
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
	return e.reconcileRun(ctx, run)
}

func (e *Engine) reconcileRun(ctx context.Context, run *Run) (bool, error) {
	cur := run.Current()
	if cur == nil || cur.Ended() {
		if run.CancelRequested {
			_, err := e.cp.RequestCancel(ctx, run.ID, run.Reason)
			return err == nil, err
		}
		e.log.Info("reconcile: launching", "run", run.ID, "attempt", run.Attempt+1)
		_, err := e.launch(ctx, run)
		return err == nil, err
	}
	msg := &ErrorMessage{Type: ErrorTypeLeaseExpired, Retryable: true,
		Message: "the worker stopped heartbeating; its lease expired"}
	switch {
	case !cur.Claimed():
		msg = &ErrorMessage{Type: ErrorTypeStartTimeout, Retryable: true,
			Message: "no worker claimed the attempt before its start timeout"}
	case run.CancelRequested:
		msg = &ErrorMessage{Type: ErrorTypeCancelled,
			Message: fmt.Sprintf("the worker did not stop within the cancel timeout (%d ms)", run.Policy.CancelTimeout().Milliseconds())}
	}
	e.log.Info("reconcile: ending attempt", "run", run.ID, "attempt", cur.Number, "reason", msg.Type)
	_, err := e.cp.Finish(ctx, Finish{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
		Outcome: Outcome{Error: msg}, IfVersion: run.Version, NowMs: e.nowMs()})
	if err != nil {
		return false, err
	}
	if c, ok := e.launcher.(Canceler); ok && cur.Ref != nil {
		if err := c.Cancel(ctx, *cur.Ref); err != nil {
			e.log.Warn("reconcile: stop abandoned attempt", "run", run.ID, "err", err)
		}
	}
	return true, nil
}

// RunReconciler calls Reconcile every interval until ctx ends. Every
// long-lived sortie process runs one, so embedded runs recover without a
// separate daemon.
func (e *Engine) RunReconciler(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := e.Reconcile(ctx); errors.Is(err, ErrClosed) {
			return
		} else if err != nil && ctx.Err() == nil {
			e.log.Warn("reconcile", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
