package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sortie-run/sortie"
)

// sessionRunner returns the runner of an attempt on a process of pool
// (the [SessionVersion] protocol). name names the runtime in errors. When
// own is set the process is the attempt's compute (a warm `sortie
// worker`): if it dies during the attempt, the attempt ends without a
// finish, as a one-shot worker's would ([ComputeEndedError]); otherwise
// (an exec runtime's warm command) the attempt fails with error type
// "exit", as with a one-shot exec command.
func sessionRunner(name string, pool *Pool, own bool) runner {
	return func(ctx context.Context, c *Call, margin time.Duration) sortie.Outcome {
		w, err := pool.acquire(ctx)
		if err != nil {
			return errorOutcome(errTypeError, fmt.Sprintf("%s: no worker process: %v", name, err), true)
		}
		x := &sessionAttempt{name: name, pool: pool, w: w, call: c, margin: margin, own: own}
		o := x.run(ctx)
		pool.release(w, x.reusable)
		return o
	}
}

// sessionAttempt drives one attempt on a warm process.
type sessionAttempt struct {
	name     string
	pool     *Pool
	w        *warm
	call     *Call
	margin   time.Duration
	own      bool
	reusable bool // the process ended the attempt by the protocol
	killed   bool // it was killed for not stopping in time
}

// run sends the invoke, forwards the events until the terminal message,
// and on ctx's end asks the process to stop, killing it after the grace.
func (x *sessionAttempt) run(ctx context.Context) sortie.Outcome {
	inv := *workerInvocation(x.call)
	if tp, ts := sortie.TraceContextOf(ctx); tp != "" {
		inv.TraceParent, inv.TraceState = tp, ts // the worker's spans go under the attempt's
	}
	log := x.call.log.With("runtime", x.name, "pid", x.w.pid())
	x.deadline()
	if err := x.w.begin(&SessionFrame{Invoke: &SessionInvoke{Invocation: &inv, Config: x.call.cfg}}, log); err != nil {
		log.Warn("the worker process did not take the invocation; stopping it", "err", err)
		x.w.kill("it did not take an invocation")
		x.killed = true
	}
	ctxDone := ctx.Done()
	var stopAt <-chan time.Time
	for {
		select {
		case m, open := <-x.w.msgs:
			if !open {
				return x.ended()
			}
			if o, done := x.handle(ctx, m); done {
				return o
			}
		case <-ctxDone:
			ctxDone = nil
			stopAt = x.cancel(ctx, log)
		case <-stopAt:
			stopAt, x.killed = nil, true
			log.Warn("the worker process did not end the cancelled attempt within its grace; killing it", "grace", x.pool.opts.Grace)
			x.w.kill("it did not end a cancelled attempt within its grace")
		}
	}
}

// deadline gives the process its grace to read the next frame.
func (x *sessionAttempt) deadline() {
	_ = x.w.stdin.SetWriteDeadline(time.Now().Add(x.pool.opts.Grace))
}

// cancel sends a cancel frame and returns when the grace ends: the
// process's, shorter near the deadline.
func (x *sessionAttempt) cancel(ctx context.Context, log *slog.Logger) <-chan time.Time {
	grace := x.pool.opts.Grace
	if errors.Is(context.Cause(ctx), errDeadline) {
		grace = min(grace, max(x.margin/2, 10*time.Millisecond))
	}
	if !x.killed {
		x.deadline()
		if err := WriteSessionFrame(x.w.stdin, &SessionFrame{Cancel: &SessionCancel{LaunchID: x.call.inv.LaunchID}}); err != nil {
			log.Warn("send the cancel to the worker process", "err", err)
		}
	}
	return time.After(grace)
}

// handle takes one message of the attempt; done reports its outcome.
func (x *sessionAttempt) handle(ctx context.Context, m lineMessage) (sortie.Outcome, bool) {
	switch {
	case m.err != nil:
		return x.fail(errTypeProtocol, fmt.Sprintf("%s wrote an invalid message: %v", x.name, m.err), false), true
	case m.msg.Terminal():
		x.reusable = !x.killed
		return sortie.OutcomeOf(m.msg), true
	case m.msg.Step != nil:
		x.step(ctx, m.msg.Step)
		return sortie.Outcome{}, false
	case m.msg.Authorize != nil:
		x.authorize(ctx, m.msg.Authorize)
		return sortie.Outcome{}, false
	}
	e := *m.msg.Event
	e.Attempt = 0
	if e.TimeMs == 0 {
		e.TimeMs = nowMs()
	}
	if err := x.call.out.event(e); err != nil {
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			return x.fail(errTypeProtocol, fmt.Sprintf("%s wrote an invalid message: %v", x.name, atLine(m.line, err)), false), true
		}
		return x.fail(errTypeError, fmt.Sprintf("%s: %v", x.name, err), true), true
	}
	return sortie.Outcome{}, false
}

// step records a step the process reported and answers it with a step
// frame. A Go session worker replays and reports its steps itself; for an
// exec command the host reports step.completed.
func (x *sessionAttempt) step(ctx context.Context, m *sortie.StepMessage) {
	ack := &SessionStep{LaunchID: x.call.inv.LaunchID, Name: m.Name}
	if _, err := x.call.steps.reported(ctx, m, x.call.inv.Attempt, x.own); err != nil {
		ack.Error = &sortie.ErrorMessage{Type: stepErrorType(err), Message: clip(err.Error())}
	} else if !x.own {
		x.call.emitStep(EventStepCompleted, stepEvent{Name: m.Name, DurationMs: m.DurationMs, Tries: max(m.Tries, 1)})
	}
	if x.killed {
		return
	}
	x.deadline()
	if err := WriteSessionFrame(x.w.stdin, &SessionFrame{Step: ack}); err != nil {
		x.call.log.Warn("send the step's answer to the worker process", "step", m.Name, "err", err)
	}
}

// stepErrorType is the error type of a step frame for err.
func stepErrorType(err error) string {
	switch {
	case errors.Is(err, sortie.ErrInvalidArgument):
		return errTypeInvalid
	case errors.Is(err, sortie.ErrTerminal):
		return "terminal"
	case errors.Is(err, sortie.ErrConflict):
		return "conflict"
	}
	return "unavailable"
}

// fail stops the process, which must take no other attempt.
func (x *sessionAttempt) fail(typ, msg string, retryable bool) sortie.Outcome {
	x.call.log.Warn("stopping the worker process", "runtime", x.name, "reason", msg)
	x.w.kill(msg)
	return errorOutcome(typ, msg, retryable)
}

// ended is the outcome when the process's stdout ended during the attempt.
func (x *sessionAttempt) ended() sortie.Outcome {
	st := x.w.status()
	if x.killed {
		return errorOutcome(errTypeError, fmt.Sprintf("%s: the worker process did not end the attempt in time and was stopped (%s)", x.name, st.Reason), true)
	}
	if x.own {
		x.call.exit = &st
	}
	return errorOutcome(errTypeExit, fmt.Sprintf("%s ended with %s without a result, error or interrupt message", x.name, st.Reason), true)
}
