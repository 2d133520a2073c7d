package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sortie-run/sortie"
)

// errEmit marks the error of a node's Emit; errBindingNotSaved, a call
// abandoned because its binding could not be recorded. Neither is retried.
var (
	errEmit            = errors.New("emit stream event")
	errBindingNotSaved = errors.New("the remote binding could not be recorded")
)

// call is one [Node.Call] (or [Node.Resume]) under the node's policy.
type call struct {
	n       *Node
	pol     *compiledPolicy
	req     *CallRequest
	key     string // the binding key; empty: not recorded
	timeout time.Duration
	resumed bool
	start   time.Time
	b       binder
}

// attemptFunc is one attempt of a call; emitted reports that it handed an
// event to the node's Emit, after which it is not retried.
type attemptFunc func(ctx context.Context) (res *CallResult, emitted bool, err error)

// run makes the call's attempts under the policy and returns the first
// result, or the error that ended them.
func (c *call) run(ctx context.Context, try attemptFunc) (*CallResult, error) {
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	c.start = time.Now()
	c.b.init(c, ctx, abort)
	c.req.Bind = c.b.bind
	c.observe(ctx, Observation{Kind: RemoteCallStart, Attempt: 1})
	for attempt := 1; ; attempt++ {
		actx, cancel := withTimeout(ctx, c.timeout)
		res, emitted, err := try(actx)
		cancel()
		if err == nil {
			return c.succeed(ctx, res, attempt)
		}
		if cause := context.Cause(ctx); errors.Is(cause, errBindingNotSaved) {
			err = cause
		}
		if attempt >= c.pol.MaxAttempts || emitted || ctx.Err() != nil || !c.pol.Retryable(err) {
			return nil, c.fail(ctx, err, attempt)
		}
		c.observe(ctx, Observation{Kind: RemoteCallRetry, Err: err, Attempt: attempt})
		if werr := c.pol.wait(ctx, attempt); werr != nil {
			return nil, c.fail(ctx, err, attempt)
		}
	}
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// send is one attempt of a new call: Send, or Stream for a streaming node.
func (c *call) send(ctx context.Context) (*CallResult, bool, error) {
	if !c.n.Streaming {
		res, err := c.n.Transport.Send(ctx, c.req)
		return res, false, err
	}
	emitted := false
	for ev, err := range c.n.Transport.Stream(ctx, c.req) {
		if err != nil {
			return nil, emitted, err
		}
		c.b.bind(Binding{TaskID: ev.TaskID, ContextID: ev.ContextID})
		c.observe(ctx, Observation{Kind: RemoteStreamEvent, Event: &ev})
		if err := c.emit(ctx, ev); err != nil {
			return nil, true, err
		}
		emitted = emitted || c.n.Emit != nil
		if ev.Done {
			return &CallResult{Result: ev.Result, ContextID: ev.ContextID, TaskID: ev.TaskID,
				AgentURL: ev.AgentURL, Meta: ev.Meta}, emitted, nil
		}
	}
	return nil, emitted, fmt.Errorf("remote: stream from %s ended without a done event", sortie.SafeURL(c.req.AgentURL))
}

func (c *call) emit(ctx context.Context, ev StreamEvent) error {
	if c.n.Emit == nil {
		return nil
	}
	if err := c.n.Emit(ctx, ev); err != nil {
		return fmt.Errorf("remote: %w: %w", errEmit, err)
	}
	return nil
}

// succeed checks a result against the policy, ends the call's binding
// and reports the outcome.
func (c *call) succeed(ctx context.Context, res *CallResult, attempt int) (*CallResult, error) {
	c.b.finish(Binding{TaskID: res.TaskID, ContextID: res.ContextID})
	if err := c.pol.check(res); err != nil {
		o := Observation{Kind: RemoteCallError, Err: err, Attempt: attempt, BindingErr: c.b.remove(ctx)}
		c.observe(ctx, o)
		return nil, err
	}
	c.observe(ctx, Observation{Kind: RemoteCallSuccess, Attempt: attempt, BindingErr: c.b.remove(ctx)})
	return res, nil
}

// fail reports the error that ended the call, cancels the task the caller
// abandoned, and ends the binding once the task has ended.
func (c *call) fail(ctx context.Context, err error, attempt int) error {
	o := Observation{Kind: RemoteCallError, Err: err, Attempt: attempt}
	o.CancelSent, o.CancelErr = c.mirrorCancel(ctx, err)
	var te *TaskError
	if errors.As(err, &te) || errors.Is(err, ErrTaskNotFound) || (o.CancelSent && o.CancelErr == nil) {
		o.BindingErr = c.b.remove(ctx)
	}
	c.observe(ctx, o)
	return err
}

// mirrorCancel asks the remote to cancel the bound task when the call was
// abandoned (ctx ended, the call timed out, or its binding could not be
// recorded) before the task finished.
func (c *call) mirrorCancel(ctx context.Context, err error) (sent bool, cancelErr error) {
	abandoned := ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	taskID, done := c.b.task()
	if !abandoned || taskID == "" || done {
		return false, nil
	}
	timeout := c.n.CancelTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return true, c.n.Transport.Cancel(cctx, c.req.AgentURL, taskID)
}

func (c *call) observe(ctx context.Context, o Observation) {
	o.Resumed = c.resumed
	c.n.observe(ctx, o, &c.b, c.start)
}
