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
	pid    int
	mu     sync.Mutex
	exited bool // the child exited: no signal is sent any more (its pid may be reused once reaped)

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

// finish records the final status and wakes waiters.
func (a *attempt) finish(st sortie.Status) {
	st.LogURL = a.logURL
	a.status = st
	close(a.done)
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
// process group, SIGKILL after Grace, and it returns once the child was
// reaped. An in-process attempt's context is cancelled and stop waits up
// to Grace for the function to return. Only ctx's error is returned.
func (l *Launcher) stop(ctx context.Context, a *attempt) error {
	if a.cancel != nil {
		a.cancel()
		return a.wait(ctx, l.opts.Grace)
	}
	if !a.signal(syscall.SIGTERM) {
		return a.wait(ctx, 0)
	}
	if err := a.wait(ctx, l.opts.Grace); err != nil || a.isDone() {
		return err
	}
	a.signal(syscall.SIGKILL)
	return a.wait(ctx, 0)
}

// wait waits until the attempt is done, ctx ends (returning its error) or,
// when limit is positive, limit passes (returning nil).
func (a *attempt) wait(ctx context.Context, limit time.Duration) error {
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-a.done:
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failedStatus is the status of an attempt that ended with reason.
func failedStatus(format string, args ...any) sortie.Status {
	return sortie.Status{Phase: sortie.PhaseFailed, Reason: fmt.Sprintf(format, args...)}
}
