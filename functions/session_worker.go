package functions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// sessionEventWindow is how long a session worker gathers events before it
// writes them, in one write: short, as the host batches them again for
// its reporter.
const sessionEventWindow = time.Millisecond

// errSessionEnded is the cause of an attempt stopped because the session's
// stdin ended: the host is gone.
var errSessionEnded = errors.New("the session's stdin ended")

// ServeSession is the worker side of the [SessionVersion] protocol
// (`sortie worker --session`): it reads [SessionFrame] lines from stdin and
// executes each invoked attempt in turn with [NewStreamReporter] on
// stdout, its events written within a millisecond, in batches, until
// stdin ends or ctx ends. It claims nothing and opens no configuration:
// the host does both and sends the opened configuration with the
// invocation. A cancel frame for the attempt in progress ends its
// handler's context (error type "cancelled").
//
// It returns nil when stdin ended, after ending the attempt in progress;
// an error for an invalid frame, a failed write, or a handler that did not return after its context ended
// (the process should exit then: that handler still runs); and ctx's
// error.
func (w *Worker) ServeSession(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	frames := make(chan frameOrErr)
	go readFrames(NewSessionReader(stdin), frames)
	s := &sessionWorker{w: w, out: NewStreamReporter(stdout), done: make(chan error, 1)}
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return s.stop(errSessionEnded)
			}
			if err := s.handle(ctx, f); err != nil {
				return errors.Join(err, s.stop(err))
			}
		case err := <-s.done:
			s.running = nil
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return errors.Join(ctx.Err(), s.stop(context.Cause(ctx)))
		}
	}
}

type frameOrErr struct {
	f   *SessionFrame
	err error
}

// readFrames sends the frames of r until its end (then it closes out) or
// an invalid frame (sent as the last item).
func readFrames(r *SessionReader, out chan<- frameOrErr) {
	defer close(out)
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		out <- frameOrErr{f, err}
		if err != nil {
			return
		}
	}
}

// sessionWorker runs one attempt at a time.
type sessionWorker struct {
	w       *Worker
	out     Reporter
	done    chan error // the running attempt's end
	running *running
}

// running is the attempt in progress.
type running struct {
	launchID string
	cancel   context.CancelCauseFunc
}

func (s *sessionWorker) handle(ctx context.Context, f frameOrErr) error {
	switch {
	case f.err != nil:
		return fmt.Errorf("session: %w", f.err)
	case f.f.Cancel != nil:
		if s.running != nil && s.running.launchID == f.f.Cancel.LaunchID {
			s.running.cancel(errCancelRequested)
		}
		return nil
	case s.running != nil:
		// The host sends an invoke once it read the terminal message, which
		// the attempt writes just before it returns: wait for that.
		s.running = nil
		if err := <-s.done; err != nil {
			return err
		}
	}
	inv, cfg := f.f.Invoke.Invocation, f.f.Invoke.Config
	actx, cancel := context.WithCancelCause(ctx)
	s.running = &running{launchID: inv.LaunchID, cancel: cancel}
	w := *s.w
	w.EventWindow = sessionEventWindow
	go func() {
		defer cancel(nil)
		_, a, err := w.execute(actx, inv, s.out, &opened{cfg: cfg})
		if err == nil && a != nil && a.call != nil && a.call.abandoned.Load() {
			err = fmt.Errorf("session: the handler of run %s attempt %d did not return after its context ended; this process must not take another attempt", inv.RunID, inv.Attempt)
		}
		s.done <- err
	}()
	return nil
}

// stop ends the attempt in progress with cause and waits for it.
func (s *sessionWorker) stop(cause error) error {
	if s.running == nil {
		return nil
	}
	s.running.cancel(cause)
	s.running = nil
	return <-s.done
}
