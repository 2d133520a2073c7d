package functions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sortie-run/sortie"
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
	acks     chan *SessionStep // the host's answers to its step messages
	auths    *authWaiters      // the host's answers to its authorize messages
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
	case f.f.Step != nil:
		if s.running != nil && s.running.launchID == f.f.Step.LaunchID {
			select {
			case s.running.acks <- f.f.Step:
			default: // nobody waits for it
			}
		}
		return nil
	case f.f.Authorize != nil:
		if s.running != nil && s.running.launchID == f.f.Authorize.LaunchID {
			s.running.auths.deliver(f.f.Authorize)
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
	s.running = &running{launchID: inv.LaunchID, cancel: cancel, acks: make(chan *SessionStep, 1), auths: newAuthWaiters()}
	rep := &sessionReporter{Reporter: s.out, acks: s.running.acks, auths: s.running.auths, stopped: actx.Done()}
	w := *s.w
	w.EventWindow = sessionEventWindow
	go func() {
		defer cancel(nil)
		_, a, err := w.execute(actx, inv, rep, &opened{cfg: cfg})
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

// sessionReporter is a session worker's reporter of one attempt: its
// messages go to stdout, and a step waits for the host's step frame.
type sessionReporter struct {
	Reporter                     // the stream reporter of stdout
	acks     <-chan *SessionStep // the host's answers
	auths    *authWaiters
	stopped  <-chan struct{} // closed when the attempt is stopped
}

// Step writes the step message and returns when the host answered it:
// nil once the step is recorded, else the error the answer names (not
// retried: the host takes a step's name once per attempt).
func (r *sessionReporter) Step(ctx context.Context, st sortie.Step) error {
	if err := r.Reporter.Step(ctx, st); err != nil {
		return err
	}
	for {
		select {
		case ack := <-r.acks:
			if ack.Name == st.Name {
				return ackError(ack)
			}
		case <-r.stopped:
			return fmt.Errorf("record step %q: the attempt was stopped before the host answered", st.Name)
		case <-ctx.Done():
			return fmt.Errorf("record step %q: no answer from the host: %w", st.Name, context.Cause(ctx))
		}
	}
}

// ackError maps a step frame's error back to the sentinel it stands for.
func ackError(ack *SessionStep) error {
	e := ack.Error
	if e == nil {
		return nil
	}
	switch e.Type {
	case "conflict":
		return fmt.Errorf("record step %q: %s: %w", ack.Name, e.Message, sortie.ErrConflict)
	case "terminal":
		return fmt.Errorf("record step %q: %s: %w", ack.Name, e.Message, sortie.ErrTerminal)
	case errTypeInvalid:
		return sortie.Invalidf("step", "%s", e.Message)
	}
	return fmt.Errorf("record step %q: the host could not record it: %s", ack.Name, e.Message)
}
