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

// DefaultEventWindow is how long the worker holds an attempt's first
// unsent event for more to join its batch (see [Worker.EventWindow]).
const DefaultEventWindow = 5 * time.Millisecond

// maxBatchBytes bounds a batch's events by their worst-case JSON size
// (see eventBytes), so a batch fits a callback request
// (server/callback.MaxEventsBodyBytes, 1 MiB) with room to spare.
const maxBatchBytes = 512 << 10

var errAttemptEnded = errors.New("the attempt has ended")

// sender serialises an attempt's reporter calls and batches its events:
// events go out in seq order, heartbeats between batches, the finish last.
// An event waits at most window for others to join its batch; a full batch
// (sortie.MaxEventsPerAppend events or maxBatchBytes) is sent at once by
// the event that filled it, and what is pending is sent before each
// heartbeat and before the finish. Its context is the worker's without its
// cancellation, so a worker being shut down still reports.
type sender struct {
	rep    Reporter
	window time.Duration // ≤ 0: each event is sent before event returns
	// mask masks every event before it is queued; nil masks nothing.
	mask *masker
	// lost is called when the reporter says the claim is no longer live.
	lost func()

	send sync.Mutex // held across each reporter call, so calls never overlap

	mu      sync.Mutex // guards the fields below; never held across a reporter call
	ctx     context.Context
	seq     int64          // last seq given out
	pending []sortie.Event // numbered, not yet sent
	bytes   int            // worst-case JSON size of pending
	timer   *time.Timer    // flushes pending when the window ends
	failed  error          // the first failed send: later events get it
	ended   bool
}

// event numbers e (or checks its seq) and queues it; it sends the batch
// before returning when the batch is full or batching is off. It returns
// the error of an earlier send that failed: the events of a failed batch
// are lost, and so are later ones.
func (s *sender) event(e sortie.Event) error {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return fmt.Errorf("emit %q: %w", e.Kind, errAttemptEnded)
	case s.failed != nil:
		s.mu.Unlock()
		return s.failed
	}
	e = s.mask.event(e)
	next := s.seq + 1
	if e.Seq != 0 && e.Seq != next {
		s.mu.Unlock()
		return sortie.Invalidf("event.seq", "%d is out of order, want %d", e.Seq, next)
	}
	e.Seq, s.seq = next, next
	s.pending = append(s.pending, e)
	s.bytes += eventBytes(&e)
	full := len(s.pending) >= sortie.MaxEventsPerAppend || s.bytes >= maxBatchBytes
	if !full && s.window > 0 && s.timer == nil {
		s.timer = time.AfterFunc(s.window, func() { _ = s.flush(true) })
	}
	s.mu.Unlock()
	switch {
	case s.window <= 0:
		return s.flush(true)
	case full:
		return s.flush(false)
	}
	return nil
}

// eventBytes is an upper bound of e's JSON size: text escapes to at most
// six bytes a byte, data is JSON already.
func eventBytes(e *sortie.Event) int {
	return 128 + len(e.Kind) + 6*len(e.Text) + len(e.Data)
}

// flush sends what is pending (with all false, only the full batches: the
// last one waits for its window) and returns the sender's failure, if any.
func (s *sender) flush(all bool) error {
	s.send.Lock()
	defer s.send.Unlock()
	return s.flushLocked(all)
}

// flushLocked is flush with s.send held.
func (s *sender) flushLocked(all bool) error {
	s.mu.Lock()
	pending, ctx, failed := s.pending, s.ctx, s.failed
	s.pending, s.bytes = nil, 0
	if all && s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	if failed != nil {
		return failed
	}
	for len(pending) > 0 {
		n := batchLen(pending)
		if !all && n == len(pending) && n < sortie.MaxEventsPerAppend {
			s.requeue(pending)
			return nil
		}
		if err := s.sendBatch(ctx, pending[:n]); err != nil {
			return err
		}
		pending = pending[n:]
	}
	return nil
}

// requeue puts evs back before the events queued since they were taken;
// the window's timer still runs.
func (s *sender) requeue(evs []sortie.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(evs, s.pending...)
	s.bytes = 0
	for i := range s.pending {
		s.bytes += eventBytes(&s.pending[i])
	}
}

// batchLen is how many of evs (at least one) fit one batch.
func batchLen(evs []sortie.Event) int {
	n, size := 0, 0
	for n < len(evs) && n < sortie.MaxEventsPerAppend {
		size += eventBytes(&evs[n])
		if n > 0 && size > maxBatchBytes {
			break
		}
		n++
	}
	return n
}

// sendBatch sends one batch; a failure is recorded for later events.
func (s *sender) sendBatch(ctx context.Context, batch []sortie.Event) error {
	err := call(ctx, reportTimeout, func(ctx context.Context) error { return s.rep.Events(ctx, batch) })
	if err == nil {
		return nil
	}
	err = fmt.Errorf("send events %d-%d: %w", batch[0].Seq, batch[len(batch)-1].Seq, err)
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	s.mu.Unlock()
	if claimLost(err) && s.lost != nil {
		s.lost()
	}
	return err
}

// step sends the pending events, then records st, so the step follows
// every event emitted before it. It fails once the attempt ended or a
// send failed. (A refusal does not stop the handler: ErrConflict may mean
// other content under the step's name; the next heartbeat tells a lost
// claim.)
func (s *sender) step(st sortie.Step) error {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	ended, ctx := s.ended, s.ctx
	s.mu.Unlock()
	if ended {
		return fmt.Errorf("record step %q: %w", st.Name, errAttemptEnded)
	}
	if err := s.flushLocked(true); err != nil {
		return err
	}
	return call(ctx, reportTimeout, func(ctx context.Context) error { return s.rep.Step(ctx, st) })
}

// heartbeat sends the pending events, then a heartbeat, unless the
// attempt has ended.
func (s *sender) heartbeat(timeout time.Duration) (cancelRequested bool, err error) {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	ended, ctx := s.ended, s.ctx
	s.mu.Unlock()
	if ended {
		return false, nil
	}
	_ = s.flushLocked(true) // a failure is the next event's error; the heartbeat says whether the claim holds
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.rep.Heartbeat(ctx)
}

// finish ends the attempt: later events are refused, the pending ones are
// sent, then the outcome (also when sending the events failed).
func (s *sender) finish(ctx context.Context, o sortie.Outcome) error {
	s.mu.Lock()
	s.ended = true
	s.ctx = ctx
	s.mu.Unlock()
	s.send.Lock()
	defer s.send.Unlock()
	_ = s.flushLocked(true)
	return call(ctx, reportTimeout, func(ctx context.Context) error { return s.rep.Finish(ctx, o) })
}

// call runs f with a timeout, trying again with backoff while it fails with
// sortie.ErrUnavailable. Events carry their seq, so a retry is a no-op at
// the control plane when the first try was stored.
func call(base context.Context, timeout time.Duration, f func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(base, timeout)
		err := f(ctx)
		cancel()
		if err == nil || try == reportTries || !errors.Is(err, sortie.ErrUnavailable) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-base.Done():
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

// abandon ends the attempt without a finish: later events are refused and
// the pending ones are sent.
func (s *sender) abandon() error {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	return s.flush(true)
}
