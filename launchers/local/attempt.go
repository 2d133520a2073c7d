package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/sortie-run/sortie"
)

// attempt is one attempt this launcher started: a worker subprocess or an
// in-process goroutine.
type attempt struct {
	ref    sortie.Ref
	logURL string
	done   chan struct{} // closed once the attempt ended and status is set
	status sortie.Status // the final status; read only after done

	// Subprocess mode.
	pid       int
	mu        sync.Mutex
	exited    bool // the child exited: no signal is sent any more (its pid may be reused once reaped)
	cancelled bool // Cancel or Shutdown stopped it

	// In-process mode.
	cancel context.CancelFunc
}

func newAttempt(ref sortie.Ref, logURL string) *attempt {
	return &attempt{ref: ref, logURL: logURL, done: make(chan struct{})}
}

func (a *attempt) isDone() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// finish records the final status and wakes waiters. An attempt that
// Cancel stopped (and that had not exited before) is cancelled, whatever
// its exit status.
func (a *attempt) finish(st sortie.Status) {
	st.LogURL = a.logURL
	a.mu.Lock()
	if a.cancelled && st.Phase != sortie.PhaseUnknown {
		st.Phase = sortie.PhaseCancelled
		st.Reason = "stopped by Cancel; " + st.Reason
	}
	a.mu.Unlock()
	a.status = st
	close(a.done)
}

// markCancelled records that Cancel is stopping the attempt; false when it
// had already ended.
func (a *attempt) markCancelled() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isDone() {
		return false
	}
	a.cancelled = true
	return true
}

func (a *attempt) describe() sortie.Status {
	if a.isDone() {
		return a.status
	}
	return sortie.Status{Phase: sortie.PhaseRunning, LogURL: a.logURL}
}

// signal sends sig to the child's process group unless the child exited.
// It reports whether the signal was sent.
func (a *attempt) signal(sig syscall.Signal) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.exited {
		return false
	}
	err := syscall.Kill(-a.pid, sig)
	return !errors.Is(err, syscall.ESRCH)
}

func (a *attempt) markExited() {
	a.mu.Lock()
	a.exited = true
	a.mu.Unlock()
}

// stop ends an attempt this launcher started: SIGTERM to the child's
// process group, SIGKILL after the grace (Grace, or less when ctx's
// deadline comes sooner: the kill lands before it), and it returns once
// the child was reaped. A frozen (stopped) child keeps the SIGTERM pending
// and is killed. An in-process attempt's context is cancelled and stop
// waits up to the grace for the function to return. When ctx ends first
// stop still sends SIGKILL and returns ctx's error, its only error.
func (l *Launcher) stop(ctx context.Context, a *attempt) error {
	if !a.markCancelled() {
		return nil
	}
	grace := l.grace(ctx)
	if a.cancel != nil {
		a.cancel()
		_, err := a.wait(ctx, grace)
		return err
	}
	if !a.signal(syscall.SIGTERM) {
		_, err := a.wait(ctx, 0)
		return err
	}
	if done, err := a.wait(ctx, grace); done {
		return nil
	} else if err != nil {
		a.signal(syscall.SIGKILL)
		return err
	}
	a.signal(syscall.SIGKILL)
	_, err := a.wait(ctx, 0)
	return err
}

// wait waits until the attempt is done (true), ctx ends (returning its
// error) or, when limit is positive, limit passes (false, nil).
func (a *attempt) wait(ctx context.Context, limit time.Duration) (bool, error) {
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-a.done:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// failedStatus is the status of an attempt that ended with reason.
func failedStatus(format string, args ...any) sortie.Status {
	return sortie.Status{Phase: sortie.PhaseFailed, Reason: fmt.Sprintf(format, args...)}
}
