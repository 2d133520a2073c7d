package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sortie-run/sortie"
)

// Event kinds of durable steps. Their data is a JSON object with "name"
// and, for step.completed and step.replayed, "duration_ms" and "tries";
// step.replayed also names the attempt that ran the step ("attempt"), and
// step.failed carries "tries" and "error" (the message). No event carries
// a step's result.
const (
	EventStepStarted   = "step.started"
	EventStepCompleted = "step.completed"
	EventStepReplayed  = "step.replayed"
	EventStepFailed    = "step.failed"
)

// Defaults of [StepOptions].
const (
	DefaultStepTries      = 3
	DefaultStepBackoff    = 200 * time.Millisecond
	DefaultStepMaxBackoff = 10 * time.Second
)

// StepOptions are a step's own options ([Call.Step]); zero fields take
// the documented defaults.
type StepOptions struct {
	// Tries is how many times fn may run in this attempt before the step
	// fails. Optional; defaults to [DefaultStepTries] (3).
	Tries int
	// Backoff is the wait before the second try, doubled for each later
	// one up to MaxBackoff. Optional; default [DefaultStepBackoff] (200
	// ms) and [DefaultStepMaxBackoff] (10 s).
	Backoff, MaxBackoff time.Duration
	// Retryable reports whether a failure may be tried again. Optional;
	// defaults to every error but those of [Permanent], [Rejected] and
	// [Interrupt], those matching sortie.ErrInvalidArgument or
	// sortie.ErrRefused, and the
	// context's end.
	Retryable func(error) bool
	// Secret keeps the result out of the control plane's clear text: the
	// worker runtime stores it sealed (the worker's [StepSealer]), the API
	// shows no result, and only later attempts of the run see it.
	// Without a StepSealer the step fails after fn returns.
	Secret bool
}

func (o *StepOptions) withDefaults() StepOptions {
	d := *o
	if d.Tries <= 0 {
		d.Tries = DefaultStepTries
	}
	if d.Backoff <= 0 {
		d.Backoff = DefaultStepBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultStepMaxBackoff
	}
	if d.Retryable == nil {
		d.Retryable = retryableStepError
	}
	return d
}

func retryableStepError(err error) bool {
	var (
		pe *permanentError
		re *rejectedError
		ie *interruptError
	)
	return !errors.As(err, &pe) && !errors.As(err, &re) && !errors.As(err, &ie) &&
		!errors.Is(err, sortie.ErrInvalidArgument) && !errors.Is(err, sortie.ErrRefused) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// StepError is the error of a step that failed: fn's last error (Unwrap),
// after Tries runs in this attempt. A handler that returns it fails the
// attempt as fn's error would: retryable unless it is [Permanent] or
// [Rejected].
type StepError struct {
	Name  string
	Tries int
	Err   error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed after %d tries: %v", e.Name, e.Tries, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Step runs fn as the durable step name of the run and returns its result
// as JSON. The first time the step completes in any attempt, its result
// (fn's value marshalled to JSON) is recorded in the control plane before
// Step returns; in every later attempt of the run (a retry, a resume) Step
// returns the recorded result without running fn. A result over
// [sortie.MaxStepResultBytes] ([sortie.MaxSecretStepInlineBytes] for a
// secret one) is kept in the
// worker's payload store, up to its per-payload limit, and recorded by
// reference ([sortie.Step.ResultRef]); a worker without a store refuses
// it with a permanent error naming the limit. A worker that reaches its
// store only through its invocation's URLs (Lambda, Cloud Run) keeps it
// in one of its attempt's step slots ([sortie.MaxStepSlots]); with all of
// them used, Step returns a retryable error naming that limit, which the
// handler should return: the next attempt replays the steps recorded so
// far and gets fresh slots. A later attempt
// that finds the object changed fails, not retryable
// (sortie.ErrPayloadIntegrity).
//
// Step names are unique per run: a name this attempt used already is a
// [*sortie.ValidationError] naming it, and so is an invalid name (see
// [sortie.CheckStepName]). A failing fn is tried again per opts (the
// first value only; nil for the defaults) and then returned as a
// [*StepError]; ctx's end (a cancel, the deadline) stops the waits
// between tries, and fn must honour it too. The events step.started,
// step.completed (with its duration), step.failed and step.replayed
// report each step ([EventStepStarted] and the others), never its result.
//
// Configuration values echoed in a result are masked before it is
// recorded, as in events ([Call.Config]). A result that cannot be recorded
// (the claim lost, another attempt recorded other content under the name:
// sortie.ErrConflict) is an error; the step's work was done but a later
// attempt runs it again.
func (c *Call) Step(ctx context.Context, name string, fn func(ctx context.Context) (any, error), opts ...*StepOptions) (json.RawMessage, error) {
	o := StepOptions{}
	if len(opts) > 0 && opts[0] != nil {
		o = *opts[0]
	}
	if err := c.steps.begin(name); err != nil {
		return nil, err
	}
	if st, ok := c.steps.recorded(name); ok {
		c.emitStep(EventStepReplayed, stepEvent{Name: name, Attempt: st.Attempt, DurationMs: st.DurationMs, Tries: st.Tries})
		return st.Result, nil
	}
	return c.runStep(ctx, name, fn, o.withDefaults())
}

// Step is [Call.Step] with a typed result: fn's value the first time, the
// recorded JSON decoded into a T in later attempts.
func Step[T any](ctx context.Context, c *Call, name string, fn func(ctx context.Context) (T, error), opts ...*StepOptions) (T, error) {
	var out T
	b, err := c.Step(ctx, name, func(ctx context.Context) (any, error) { return fn(ctx) }, opts...)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("step %q: decode its recorded result into %T: %w", name, out, err)
	}
	return out, nil
}

// stepEvent is the data of a step event.
type stepEvent struct {
	Name       string `json:"name"`
	Attempt    int    `json:"attempt,omitempty"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Tries      int    `json:"tries,omitempty"`
	Error      string `json:"error,omitempty"`
}

// emitStep reports a step event; a failure to report it is the next
// Emit's (or the step record's) error.
func (c *Call) emitStep(kind string, e stepEvent) { _ = c.Emit(kind, "", e) }

// runStep runs fn with o's tries and records its result.
func (c *Call) runStep(ctx context.Context, name string, fn func(ctx context.Context) (any, error), o StepOptions) (json.RawMessage, error) {
	c.emitStep(EventStepStarted, stepEvent{Name: name})
	start := time.Now()
	out, tries, err := tryStep(ctx, fn, o)
	dur := time.Since(start).Milliseconds()
	if err != nil {
		c.emitStep(EventStepFailed, stepEvent{Name: name, Tries: tries, Error: c.mask.text(err.Error())})
		return nil, &StepError{Name: name, Tries: tries, Err: err}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &StepError{Name: name, Tries: tries, Err: Permanent(fmt.Errorf("marshal the result: %w", err))}
	}
	st := sortie.Step{Name: name, Attempt: c.inv.Attempt, Status: sortie.StepCompleted, Secret: o.Secret,
		Result: b, StartedMs: start.UnixMilli(), DurationMs: dur, Tries: tries}
	got, err := c.steps.record(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("step %q completed but was not recorded: %w", name, err)
	}
	c.emitStep(EventStepCompleted, stepEvent{Name: name, DurationMs: dur, Tries: tries})
	return got, nil
}

// tryStep runs fn up to o.Tries times with backoff while its failures are
// retryable and ctx lasts.
func tryStep(ctx context.Context, fn func(ctx context.Context) (any, error), o StepOptions) (any, int, error) {
	backoff := o.Backoff
	for try := 1; ; try++ {
		out, err := fn(ctx)
		if err == nil {
			return out, try, nil
		}
		if try >= o.Tries || !o.Retryable(err) || ctx.Err() != nil {
			return nil, try, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, try, errors.Join(err, context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
}
