package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sortie-run/sortie"
)

// execRunner returns the runner of runtime "exec:"+id. The command gets
// the attempt's inline configuration in its environment, never in the
// invocation on its stdin, and the run's recorded steps in the clear in
// the invocation.
func execRunner(id string, spec ExecSpec) runner {
	return func(ctx context.Context, c *Call, margin time.Duration) sortie.Outcome {
		input, err := json.Marshal(workerInvocation(c))
		if err != nil {
			return errorOutcome(errTypeError, fmt.Sprintf("exec:%s: encode invocation: %v", id, err), false)
		}
		run := spec
		run.Env = withConfig(spec.Env, c.cfg)
		p, err := startProc(run, append(input, '\n'), c.log.With("runtime", "exec:"+id))
		if err != nil {
			return errorOutcome(errTypeError, fmt.Sprintf("exec:%s: start: %v", id, err), false)
		}
		x := &execAttempt{id: id, ctx: ctx, call: c, p: p, grace: time.Duration(spec.GraceMs) * time.Millisecond, margin: margin}
		if x.grace <= 0 {
			x.grace = defaultGraceMs * time.Millisecond
		}
		return x.run(ctx)
	}
}

// workerInvocation is the invocation a worker process gets: no sealed
// configuration or payload URLs, and the run's recorded steps in the clear.
func workerInvocation(c *Call) *sortie.Invocation {
	inv := *c.inv
	inv.SealedConfig, inv.SealedPayloadURLs = nil, nil
	inv.Steps, inv.StepsRef = c.steps.list(), nil
	return &inv
}

// execAttempt drives one exec worker process.
type execAttempt struct {
	id     string
	ctx    context.Context // the handler's
	call   *Call
	p      *proc
	grace  time.Duration
	margin time.Duration

	term    *sortie.Message // the first terminal message
	failure *sortie.Outcome // a protocol or reporting failure
	// stopAt, when set, is the next step of stopping the process:
	// SIGTERM first (stopTerm), then SIGKILL.
	stopAt   *time.Timer
	stopTerm bool
}

type lineMessage struct {
	msg  *sortie.Message
	line int
	err  error
}

// run reads the worker's messages until its stdout ends and it exited.
// Events are forwarded while no terminal message or failure came; what
// follows is drained and dropped.
func (x *execAttempt) run(ctx context.Context) sortie.Outcome {
	msgs := make(chan lineMessage)
	stopRead := make(chan struct{})
	go x.read(msgs, stopRead)
	defer close(stopRead)
	defer x.p.stdout.Close()
	ctxDone, exited := ctx.Done(), x.p.exited
	var drain <-chan time.Time
	for msgs != nil || exited != nil {
		select {
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				x.ended("its stdout closed")
				continue
			}
			x.handle(m)
		case <-exited:
			exited = nil
			x.p.cleanup()
			// A process that left the group may still hold stdout.
			drain = time.After(time.Second)
		case <-drain:
			_ = x.p.stdout.Close()
		case <-ctxDone:
			ctxDone = nil
			x.interrupt(ctx)
		case <-x.timerC():
			x.step()
		}
	}
	if x.stopAt != nil {
		x.stopAt.Stop()
	}
	return x.outcome()
}

// read sends the messages of the worker's stdout until it ends.
func (x *execAttempt) read(out chan<- lineMessage, stop <-chan struct{}) {
	defer close(out)
	r := NewMessageReader(x.p.stdout)
	for {
		m, err := r.Next()
		if err != nil && !errors.Is(err, sortie.ErrInvalidArgument) {
			return // io.EOF, or the read end was closed
		}
		select {
		case out <- lineMessage{msg: m, line: r.line, err: err}:
		case <-stop:
			return
		}
	}
}

func (x *execAttempt) handle(m lineMessage) {
	if x.term != nil || x.failure != nil {
		return // drained and dropped
	}
	if m.err != nil {
		x.fail(errTypeProtocol, fmt.Sprintf("exec:%s wrote an invalid message: %v", x.id, m.err), false)
		return
	}
	if m.msg.Terminal() {
		x.term = m.msg
		x.ended("it sent its " + terminalKind(m.msg) + " message")
		return
	}
	if m.msg.Step != nil {
		x.recordStep(m)
		return
	}
	if m.msg.Authorize != nil {
		// A one-shot worker's stdin is closed: there is no way to answer.
		x.fail(errTypeProtocol, fmt.Sprintf("exec:%s sent an authorize message, which only a session worker can be answered (set \"protocol\": %q in the runtimes file)", x.id, SessionVersion), false)
		return
	}
	if err := x.forward(*m.msg.Event); err != nil {
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			x.fail(errTypeProtocol, fmt.Sprintf("exec:%s wrote an invalid message: %v", x.id, atLine(m.line, err)), false)
			return
		}
		x.fail(errTypeError, fmt.Sprintf("exec:%s: %v", x.id, err), true)
	}
}

// recordStep records a step the worker reported, before its next message
// is read, and reports step.completed. There is no answer to wait for: a
// one-shot worker's stdin is closed.
func (x *execAttempt) recordStep(m lineMessage) {
	if _, err := x.call.steps.reported(x.ctx, m.msg.Step, x.call.inv.Attempt, false); err != nil {
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			x.fail(errTypeProtocol, fmt.Sprintf("exec:%s reported a step it must not: %v", x.id, atLine(m.line, err)), false)
			return
		}
		x.fail(errTypeError, fmt.Sprintf("exec:%s: %v", x.id, err), true)
		return
	}
	x.call.emitStep(EventStepCompleted, stepEvent{Name: m.msg.Step.Name, DurationMs: m.msg.Step.DurationMs, Tries: max(m.msg.Step.Tries, 1)})
}

// forward sends a worker's event: numbered when it has no seq, checked
// to be the next one when it has.
func (x *execAttempt) forward(e sortie.Event) error {
	e.Attempt = 0
	if e.TimeMs == 0 {
		e.TimeMs = nowMs()
	}
	return x.call.out.event(e)
}

func terminalKind(m *sortie.Message) string {
	switch {
	case m.Result != nil:
		return "result"
	case m.Error != nil:
		return "error"
	}
	return "interrupt"
}

// fail records a failure and kills the worker at once.
func (x *execAttempt) fail(typ, msg string, retryable bool) {
	o := errorOutcome(typ, msg, retryable)
	x.failure = &o
	x.call.log.Warn("stopping exec worker", "runtime", "exec:"+x.id, "reason", msg)
	x.p.signal(true)
}

// ended starts stopping a worker that is done: it gets a grace period to
// exit on its own, then SIGTERM, then SIGKILL.
func (x *execAttempt) ended(why string) {
	if x.stopAt == nil && x.failure == nil {
		x.call.log.Debug("exec worker done; waiting for it to exit", "runtime", "exec:"+x.id, "why", why)
		x.stopAt, x.stopTerm = time.NewTimer(x.grace), true
	}
}

// interrupt stops the worker because the attempt's context ended: SIGTERM
// now, SIGKILL after the grace period (capped by the deadline margin).
func (x *execAttempt) interrupt(ctx context.Context) {
	grace := x.grace
	if errors.Is(context.Cause(ctx), errDeadline) {
		grace = min(grace, max(x.margin/2, 10*time.Millisecond))
	}
	x.p.signal(false)
	if x.stopAt != nil {
		x.stopAt.Stop()
	}
	x.stopAt, x.stopTerm = time.NewTimer(grace), false
}

func (x *execAttempt) timerC() <-chan time.Time {
	if x.stopAt == nil {
		return nil
	}
	return x.stopAt.C
}

// step takes the next step of stopping the worker.
func (x *execAttempt) step() {
	if x.stopTerm {
		x.p.signal(false)
		x.stopAt, x.stopTerm = time.NewTimer(x.grace), false
		return
	}
	x.call.log.Warn("exec worker still running after SIGTERM; sending SIGKILL", "runtime", "exec:"+x.id, "grace", x.grace)
	x.p.signal(true)
	x.stopAt = nil
}

func (x *execAttempt) outcome() sortie.Outcome {
	switch {
	case x.failure != nil:
		return *x.failure
	case x.term != nil:
		return sortie.OutcomeOf(x.term)
	}
	return errorOutcome(errTypeExit, fmt.Sprintf("exec:%s ended with %s without a result, error or interrupt message", x.id, x.p.status()), true)
}
