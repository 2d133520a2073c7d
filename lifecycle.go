package sortie

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of [EngineOptions].
const (
	defaultLaunchTimeout = 60 * time.Second
	defaultCloseGrace    = 10 * time.Second
)

// writeTimeout bounds the control-plane writes the engine makes on its
// own, after a Start returned or a compute ended.
const writeTimeout = 10 * time.Second

// lifecycle is what an engine does in the background and how Close ends
// it. Every entry point (Submit, Resume, Reconcile) and every goroutine
// the engine starts (a Start, a provider cancel, an exit report, a cancel
// timeout) holds one count of work, taken under mu with the closed check,
// so nothing begins after Close.
type lifecycle struct {
	mu       sync.Mutex
	closed   bool
	work     sync.WaitGroup
	starts   sync.WaitGroup           // the Start calls of work, for WaitLaunches
	launches map[string]chan struct{} // launch ID → closed once its Start returned and its Ref was stored
	quit     chan struct{}            // closed when Close begins: timers stop waiting
	hard     context.Context          // cancelled when Close's grace has passed
	stop     context.CancelFunc
	unwatch  func() // ends the launcher's exit reports
}

func (l *lifecycle) init() {
	l.launches = map[string]chan struct{}{}
	l.quit = make(chan struct{})
	l.hard, l.stop = context.WithCancel(context.Background())
}

// acquire takes one count of work for an entry point, or returns ErrClosed
// (wrapped with op) after Close.
func (l *lifecycle) acquire(op string) error {
	if !l.tryAcquire() {
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	return nil
}

// tryAcquire takes one count of work unless the engine is closed.
func (l *lifecycle) tryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.work.Add(1)
	return true
}

func (l *lifecycle) release() { l.work.Done() }

// goBackground runs f in a goroutine holding one count of work; false
// (f not run) once the engine is closed.
func (l *lifecycle) goBackground(f func()) bool {
	if !l.tryAcquire() {
		return false
	}
	go func() {
		defer l.release()
		f()
	}()
	return true
}

// beginLaunch records that the Start of launchID is in flight. The caller
// holds a count of work.
func (l *lifecycle) beginLaunch(launchID string) (done func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.launches[launchID] = ch
	l.work.Add(1)
	l.starts.Add(1)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.launches, launchID)
		l.mu.Unlock()
		close(ch)
		l.starts.Done()
		l.work.Done()
	}
}

// awaitLaunch waits until the Start of launchID (if in flight in this
// engine) returned and its Ref was stored, or until Close's grace passed.
func (l *lifecycle) awaitLaunch(launchID string) {
	l.mu.Lock()
	ch := l.launches[launchID]
	l.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-l.hard.Done():
	}
}

// start hands inv to the launcher without waiting: some launchers run the
// whole attempt inside Start. The call is bounded by
// EngineOptions.LaunchTimeout and by Close. A failed Start ends the
// attempt; a Start that returns after the run's cancel was requested has
// its compute stopped at once.
func (e *Engine) start(inv *Invocation) {
	done := e.life.beginLaunch(inv.LaunchID)
	go func() {
		defer done()
		ctx, cancel := context.WithTimeout(e.life.hard, e.opts.LaunchTimeout)
		ctx, span := startSpan(ctx, "sortie.launch", inv.TraceParent, inv.TraceState)
		setInvocationAttrs(span, inv)
		if tp, ts := TraceContextOf(ctx); tp != "" {
			inv.TraceParent, inv.TraceState = tp, ts // the worker's attempt span goes under the launch
		}
		began := time.Now()
		ref, err := e.launcher.Start(ctx, inv)
		recordLaunch(ctx, inv, began, err)
		endSpan(span, err)
		span.End()
		cancel()
		wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if err != nil {
			e.launchFailed(wctx, inv, err)
			return
		}
		run, err := e.cp.SetRef(wctx, inv.RunID, inv.Attempt, inv.LaunchID, ref)
		if err != nil {
			e.log.Debug("store launch ref", "run", inv.RunID, "err", err)
			return
		}
		if run.CancelRequested {
			e.stopCompute(run, ref) // cancelled while Start was in flight
		}
	}()
}

// launchFailed ends the attempt whose Start failed: retryable unless the
// invocation or the compute target is invalid.
func (e *Engine) launchFailed(ctx context.Context, inv *Invocation, err error) {
	e.log.Warn("launch failed", "run", inv.RunID, "attempt", inv.Attempt, "err", err)
	msg := &ErrorMessage{Type: ErrorTypeLaunch, Message: err.Error(), Retryable: !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrNotFound)}
	_, err = e.cp.Finish(ctx, Finish{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Outcome: Outcome{Error: msg}, NowMs: e.nowMs()})
	if err != nil {
		e.log.Error("record launch failure", "run", inv.RunID, "err", err)
	}
}

// WaitLaunches blocks until every Start this engine began has returned, or
// ctx ends. A host about to be frozen (a Lambda function returning from
// its handler) calls it so the launches it began are sent; with launchers
// that run the whole attempt inside Start it waits for those attempts.
func (e *Engine) WaitLaunches(ctx context.Context) error {
	return waitGroup(ctx, &e.life.starts)
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting work: Submit, Resume and Reconcile return
// ErrClosed once it began, and no Start begins after it returns. It waits
// for the calls in flight and what they began (launches, provider cancels,
// exit reports) for up to EngineOptions.CloseGrace, then cancels their
// contexts and waits for them to return. It does not close the control
// plane or the launcher. A second Close waits the same way.
func (e *Engine) Close() error {
	l := &e.life
	l.mu.Lock()
	first := !l.closed
	l.closed = true
	l.mu.Unlock()
	if first {
		close(l.quit)
		if l.unwatch != nil {
			l.unwatch()
		}
	}
	grace, cancel := context.WithTimeout(context.Background(), e.opts.CloseGrace)
	defer cancel()
	if waitGroup(grace, &l.work) != nil {
		e.log.Warn("close: launches still in flight after the grace; cancelling them", "grace", e.opts.CloseGrace)
		l.stop()
		l.work.Wait()
	}
	l.stop()
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
