package functions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

// reportTimeout bounds one reporter call.
const reportTimeout = 30 * time.Second

// reportTries is how often a reporter call failing with
// sortie.ErrUnavailable is tried.
const reportTries = 3

var errAttemptEnded = errors.New("the attempt has ended")

// sender serialises an attempt's reporter calls: events go out in seq order,
// heartbeats between them, the finish last. Its context is the worker's
// without its cancellation, so a worker being shut down still reports.
type sender struct {
	mu    sync.Mutex
	rep   Reporter
	ctx   context.Context
	seq   int64 // last seq sent
	ended bool
	// lost is called when the reporter says the claim is no longer live.
	lost func()
}

// event numbers e (or checks its seq) and sends it.
func (s *sender) event(e sortie.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return fmt.Errorf("emit %q: %w", e.Kind, errAttemptEnded)
	}
	next := s.seq + 1
	if e.Seq != 0 && e.Seq != next {
		return sortie.Invalidf("event.seq", "%d is out of order, want %d", e.Seq, next)
	}
	e.Seq = next
	err := s.call(reportTimeout, func(ctx context.Context) error {
		return s.rep.Events(ctx, []sortie.Event{e})
	})
	if err != nil {
		if claimLost(err) && s.lost != nil {
			s.lost()
		}
		return fmt.Errorf("send event %d: %w", e.Seq, err)
	}
	s.seq = next
	return nil
}

// heartbeat sends a heartbeat unless the attempt has ended.
func (s *sender) heartbeat(timeout time.Duration) (cancelRequested bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	return s.rep.Heartbeat(ctx)
}

// finish ends the attempt: later events are refused.
func (s *sender) finish(o sortie.Outcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.call(reportTimeout, func(ctx context.Context) error { return s.rep.Finish(ctx, o) })
}

// call runs f with a timeout, trying again with backoff while it fails with
// sortie.ErrUnavailable. Events carry their seq, so a retry is a no-op at
// the control plane when the first try was stored.
func (s *sender) call(timeout time.Duration, f func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(s.ctx, timeout)
		err := f(ctx)
		cancel()
		if err == nil || try == reportTries || !errors.Is(err, sortie.ErrUnavailable) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
	}
}

// claimLost reports whether err says the claim is no longer the live one.
func claimLost(err error) bool {
	return errors.Is(err, sortie.ErrConflict) || errors.Is(err, sortie.ErrTerminal)
}
